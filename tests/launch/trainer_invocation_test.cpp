// launch/trainer_invocation and trainer_probe: what a command trainer is handed for one gate,
// as the program model says it reads it.

#include "launch/trainer_invocation.h"

#include <gtest/gtest.h>

#include "config/constraints.h"
#include "launch/trainer_probe.h"

namespace bigmac::launch {
namespace {

config::Config command(std::vector<std::string> argv) {
  config::Config c;
  c.trainer.kind = "command";
  c.trainer.command = std::move(argv);
  c.train.micro_batch_size = 4;
  c.train.gradient_accumulation_steps = 2;
  c.train.max_steps = 20;
  c.launch.nproc_per_node = 2;
  config::derive(c);
  return c;
}

TEST(GatePlaceholders, TheProgramModelSaysWhoseNumbersTheFlagsHold) {
  config::Config c = command({"python3", "train.py"});
  auto p = gate_placeholders(c, "dp", "gate.toml", "run");
  EXPECT_EQ(p.at("micro_batch_size"), "4");
  EXPECT_EQ(p.at("grad_accum"), "2");
  EXPECT_EQ(p.at("max_steps"), "20");
  // A global batch flag, an accumulation the program divides by the world size itself, and a
  // --max_iters N that runs N + 1 iterations.
  c.trainer.batch_scope = "global";
  c.trainer.accum_scope = "divided";
  c.trainer.max_steps_offset = 1;
  p = gate_placeholders(c, "dp", "gate.toml", "run");
  EXPECT_EQ(p.at("micro_batch_size"), "8");
  EXPECT_EQ(p.at("grad_accum"), "4");
  EXPECT_EQ(p.at("max_steps"), "19");
  EXPECT_EQ(gate_environment(c, p).at("BIGMAC_MICRO_BATCH_SIZE"), "8");
}

TEST(TrainerReceives, OnlyWhatTheArgvNamesOrEverythingThroughTheGateFile) {
  EXPECT_TRUE(trainer_receives(config::Config{}, "grad_accum"));  // bigmac-train
  const config::Config c = command({"python3", "train.py", "--bs={micro_batch_size}"});
  EXPECT_TRUE(trainer_receives(c, "micro_batch_size"));
  EXPECT_FALSE(trainer_receives(c, "grad_accum"));
  EXPECT_TRUE(trainer_receives(command({"t", "--config", "{gate_config}"}), "grad_accum"));
}

TEST(TrainerEnvironment, TheProbeBoundsTheStepsToTheGatesCount) {
  config::Config c = command({"python3", "train.py"});
  c.trainer.probe = true;
  c.train.max_steps = 7;
  const auto env = trainer_environment(c, "/run/01-single.1", "/probe", "");
  EXPECT_EQ(env.at("BIGMAC_PROBE_MAX_STEPS"), "7");
  EXPECT_EQ(env.at("BIGMAC_PROBE_LOG"), "/run/01-single.1/probe-rank{rank}.jsonl");
  c.trainer.probe = false;
  EXPECT_EQ(trainer_environment(c, "/run", "/probe", "").count("BIGMAC_PROBE_MAX_STEPS"), 0u);
}

}  // namespace
}  // namespace bigmac::launch
