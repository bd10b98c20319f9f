// End-to-end tests of `bigmac-bringup config ...`: the real binary, its exit codes and messages.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "testing/run_program.h"

namespace {

using ::testing::HasSubstr;
using bigmac::testing::run_program;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kDemo = std::string(BIGMAC_SOURCE_DIR) + "/configs/demo.toml";

class ConfigCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bigmac-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    std::filesystem::path p = dir_ / "config.toml";
    std::ofstream(p) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigCommand, VersionAndHelp) {
  auto version = run_program({kBinary, "--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, HasSubstr("bigmac-bringup 0."));
  auto help = run_program({kBinary, "config", "show", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--provenance"));
}

TEST_F(ConfigCommand, DemoIsValid) {
  auto r = run_program({kBinary, "config", "check", "-c", kDemo});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("configuration valid"));
}

TEST_F(ConfigCommand, FourProcessesWithThreeStagesExitTwoAndPrintTheNumbers) {
  std::string file = write("[launch]\nnproc_per_node = 4\n[parallel]\npp_size = 3\n");
  auto r = run_program({kBinary, "config", "check", "-c", file});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("world_size 4 is not divisible by pp_size 3"));
  EXPECT_THAT(r.err, HasSubstr(file + ":4:1"));
}

TEST_F(ConfigCommand, ProvenanceShowsFileAndSet) {
  std::string file = write("[train]\nmicro_batch_size = 4\n");
  auto r = run_program({kBinary, "config", "show", "-c", file, "--set",
                        "train.micro_batch_size=8", "--provenance"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("micro_batch_size = 8"));
  EXPECT_THAT(r.out, HasSubstr("* --set train.micro_batch_size=8"));
  EXPECT_THAT(r.out, HasSubstr(file + ":2:1"));
}

TEST_F(ConfigCommand, EnvironmentSitsBetweenFileAndSet) {
  std::string file = write("[train]\nseed = 5\n");
  auto from_env = run_program({kBinary, "config", "show", "-c", file, "--json"},
                              {{"BIGMAC_TRAIN_SEED", "6"}});
  ASSERT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(nlohmann::json::parse(from_env.out)["train"]["seed"], 6);
  auto from_set = run_program(
      {kBinary, "config", "show", "-c", file, "--json", "--set", "train.seed=7"},
      {{"BIGMAC_TRAIN_SEED", "6"}});
  EXPECT_EQ(nlohmann::json::parse(from_set.out)["train"]["seed"], 7);
}

TEST_F(ConfigCommand, MalformedTomlExitsTwoWithPosition) {
  std::string file = write("[train]\nseed = = 3\n");
  auto r = run_program({kBinary, "config", "check", "-c", file});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(file + ":2:"));
}

TEST_F(ConfigCommand, MissingFileExitsTwo) {
  auto r = run_program({kBinary, "config", "check", "-c", (dir_ / "absent.toml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("absent.toml: cannot open"));
}

TEST_F(ConfigCommand, UsageErrorsExitTwo) {
  EXPECT_EQ(run_program({kBinary}).exit_code, 2);
  EXPECT_EQ(run_program({kBinary, "no-such-command"}).exit_code, 2);
  EXPECT_EQ(run_program({kBinary, "config", "check", "--set", "seed"}).exit_code, 2);
}

}  // namespace
