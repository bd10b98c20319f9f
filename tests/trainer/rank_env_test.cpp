#include "trainer/rank_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace bigmac::trainer {
namespace {

Expected<RankEnv> read(const std::map<std::string, std::string>& vars) {
  return read_rank_env(
      [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      config::LaunchConfig{});
}

TEST(RankEnv, NothingSetIsOneProcess) {
  auto env = read({});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->source, "none");
  EXPECT_EQ(env->master_port, 29500)
      << "launch.master_port 0 (auto) without MASTER_PORT: torchrun's default";
}

TEST(RankEnv, TorchrunVariables) {
  auto env = read({{"RANK", "3"},
                   {"WORLD_SIZE", "4"},
                   {"LOCAL_RANK", "1"},
                   {"MASTER_ADDR", "10.0.0.2"},
                   {"MASTER_PORT", "29511"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->source, "torchrun");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "10.0.0.2");
  EXPECT_EQ(env->master_port, 29511);
  EXPECT_TRUE(env->agent_store);
  EXPECT_EQ(env->restart_count, "2");
}

TEST(RankEnv, SlurmVariablesAreTheFallback) {
  auto env = read({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->source, "slurm");
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_FALSE(env->agent_store);
}

TEST(RankEnv, InconsistentOrMalformedVariablesAreErrors) {
  EXPECT_FALSE(read({{"RANK", "0"}}));
  EXPECT_FALSE(read({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
  EXPECT_FALSE(read({{"RANK", "0"}, {"WORLD_SIZE", "0"}}));
  auto bad = read({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("$RANK"), std::string::npos);
  EXPECT_FALSE(read({{"MASTER_PORT", "70000"}}));
}

}  // namespace
}  // namespace bigmac::trainer
