#include "gates/gate_plan.h"

#include <gtest/gtest.h>

#include "config/constraints.h"
#include "record_builder.h"

namespace bigmac::gates {
namespace {

using testing::default_config;
using testing::spec;

TEST(GatePlan, DemoGatesConserveEightSamplesPerStep) {
  const config::Config c = default_config();  // micro 2, accum 4, 4 processes
  auto single = plan_gate(spec("single"), c);
  ASSERT_TRUE(single) << single.error().format();
  EXPECT_EQ(single->nproc, 1);
  EXPECT_EQ(single->samples_per_step, 8);
  EXPECT_EQ(single->config.train.gradient_accumulation_steps, 4);
  EXPECT_TRUE(single->rescaled.empty());

  auto dp = plan_gate(spec("dp"), c);
  ASSERT_TRUE(dp) << dp.error().format();
  EXPECT_EQ(dp->nproc, 4);
  EXPECT_EQ(dp->config.derived.dp, 4);
  EXPECT_EQ(dp->config.train.gradient_accumulation_steps, 1);
  EXPECT_EQ(dp->samples_per_step, 8);
  EXPECT_EQ(dp->rescaled, "train.gradient_accumulation_steps 4 -> 1");

  auto pp2 = plan_gate(spec("pp2"), c);
  ASSERT_TRUE(pp2) << pp2.error().format();
  EXPECT_EQ(pp2->nproc, 2);
  EXPECT_EQ(pp2->config.parallel.pp_size, 2);
  EXPECT_EQ(pp2->config.derived.dp, 1);
  EXPECT_EQ(pp2->config.derived.micro_batches, 4);
  EXPECT_EQ(pp2->config.train.micro_batch_size, 2);
  EXPECT_EQ(pp2->config.model.split_points, std::vector<int>{2});
  EXPECT_FALSE(pp2->config.trace.shapes);

  auto shapes = plan_gate(spec("shapes"), c);
  ASSERT_TRUE(shapes);
  EXPECT_TRUE(shapes->config.trace.shapes);

  config::Config target_config = c;
  target_config.parallel.pp_size = 2;  // 4 processes = pp 2 × dp 2
  auto target = plan_gate(spec("target"), target_config);
  ASSERT_TRUE(target) << target.error().format();
  EXPECT_EQ(target->nproc, 4);
  EXPECT_EQ(target->config.derived.dp, 2);
  EXPECT_EQ(target->config.train.gradient_accumulation_steps, 2);
  EXPECT_EQ(target->samples_per_step, 8);
}

TEST(GatePlan, ReferenceSamplesComeFromTheBaseline) {
  auto dp = plan_gate(spec("dp"), default_config(), 16);
  ASSERT_TRUE(dp);
  EXPECT_EQ(dp->config.train.gradient_accumulation_steps, 2);
  EXPECT_EQ(dp->samples_per_step, 16);
}

TEST(GatePlan, UnconservableSamplesSayWhatToChange) {
  GateSpec three = spec("dp");
  three.launch.nproc = 3;
  auto p = plan_gate(three, default_config());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("cannot keep 8 samples/step"), std::string::npos)
      << p.error().message;
  EXPECT_NE(p.error().message.find("micro_batch_size 2 × dp 3 = 6"), std::string::npos);
  // 8 samples cannot be split over dp 3 whatever the micro-batch: only nproc can change (the
  // old hint also offered micro_batch_size = 2, the value it already had).
  EXPECT_EQ(p.error().hint, "set gates.dp.nproc = 4 (dp 4)");
  config::Config micro3 = default_config();
  micro3.train.micro_batch_size = 3;
  GateSpec four = spec("dp");
  four.launch.nproc = 4;
  auto m = plan_gate(four, micro3, 8);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().hint, "set train.micro_batch_size = 2");

  GateSpec pp = spec("pp2");
  pp.launch.micro_batches = 3;
  auto q = plan_gate(pp, default_config());
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().hint.find("gates.pp2.micro_batches = 4"), std::string::npos)
      << q.error().hint;
}

TEST(GatePlan, LayoutThatDoesNotDivideIsAnError) {
  GateSpec pp = spec("pp2");
  pp.launch.nproc = 3;
  auto p = plan_gate(pp, default_config());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("not a multiple of pp × tp = 2 × 1"), std::string::npos);
  EXPECT_EQ(p.error().hint, "set gates.pp2.nproc = 4");
}

TEST(GatePlan, InputsTrackWhatTheGateReads) {
  config::Config c = default_config();
  auto a = plan_gate(spec("dp"), c);
  c.train.seed = 7;
  auto b = plan_gate(spec("dp"), c);
  c.train.seed = 1234;
  c.launch.master_port = 30000;  // where to meet is not an input
  auto d = plan_gate(spec("dp"), c);
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(a->inputs.at("train.seed"), "1234");
  EXPECT_NE(a->inputs_digest, b->inputs_digest);
  EXPECT_EQ(a->inputs_digest, d->inputs_digest);
  EXPECT_TRUE(a->inputs.count("gate.loss_rel_tol"));
}

TEST(GatePlan, ProvenanceNamesTheGate) {
  auto dp = plan_gate(spec("dp"), default_config());
  ASSERT_TRUE(dp);
  const config::Setting* accum = dp->config.settings.find("train.gradient_accumulation_steps");
  ASSERT_NE(accum, nullptr);
  EXPECT_NE(accum->origin.where.find("gate dp"), std::string::npos) << accum->origin.where;
  EXPECT_NE(format_plan(*dp).find("4 processes"), std::string::npos) << format_plan(*dp);
}

// A command trainer: only what its argv names (or its gate file) reaches it.
config::Config command_config(std::vector<std::string> command) {
  config::Config c = default_config();
  c.trainer.kind = "command";
  c.trainer.command = std::move(command);
  c.train.micro_batch_size = 8;
  c.train.gradient_accumulation_steps = 1;
  c.launch.nproc_per_node = 2;
  config::derive(c);
  return c;
}

// rescale = "auto" keeps samples/step with the knob the program takes: a program with a batch
// flag and no accumulation gets its micro-batch halved at dp, where "accum" had looped
// ("set micro_batch_size = 16", then "= 8", ...).
TEST(GatePlan, AutoRescaleUsesTheKnobTheProgramTakes) {
  auto micro_only = plan_gate(
      spec("dp"), command_config({"python3", "train.py", "--batch-size", "{micro_batch_size}"}));
  ASSERT_TRUE(micro_only) << micro_only.error().format();
  EXPECT_EQ(micro_only->config.train.micro_batch_size, 4);
  EXPECT_EQ(micro_only->config.train.gradient_accumulation_steps, 1);
  EXPECT_EQ(micro_only->samples_per_step, 8);
  EXPECT_EQ(micro_only->rescaled, "train.micro_batch_size 8 -> 4");

  config::Config accum = command_config(
      {"python3", "train.py", "--bs", "{micro_batch_size}", "--accum", "{grad_accum}"});
  accum.train.micro_batch_size = 4;
  accum.train.gradient_accumulation_steps = 2;
  auto both = plan_gate(spec("dp"), accum);
  ASSERT_TRUE(both) << both.error().format();
  EXPECT_EQ(both->rescaled, "train.gradient_accumulation_steps 2 -> 1");

  // Accumulation only, and it cannot be halved: the fix names the process count, not a
  // micro-batch the program never receives.
  config::Config odd = command_config({"python3", "train.py", "--accum", "{grad_accum}"});
  odd.train.micro_batch_size = 3;
  odd.train.gradient_accumulation_steps = 1;
  auto refused = plan_gate(spec("dp"), odd);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().hint.find("gates.dp.nproc"), std::string::npos)
      << refused.error().format();
}

// A micro-batch count pinned by the gate fixes the accumulation: auto rescales the micro-batch.
TEST(GatePlan, AutoRescaleWithPinnedMicroBatchesRescalesTheMicroBatch) {
  GateSpec dp = spec("dp");
  dp.launch.micro_batches = 2;
  config::Config c = default_config();  // micro 2 × accum 4 = 8
  c.launch.nproc_per_node = 2;
  config::derive(c);
  auto plan = plan_gate(dp, c);
  ASSERT_TRUE(plan) << plan.error().format();
  EXPECT_EQ(plan->config.train.gradient_accumulation_steps, 2);
  EXPECT_EQ(plan->config.train.micro_batch_size, 2);
  EXPECT_EQ(plan->samples_per_step, 8);
}

}  // namespace
}  // namespace bigmac::gates
