// settings_applied: one test per value a gate sets, each breaking exactly that value in what a
// healthy rank reports.

#include "gates/settings_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

CheckResult applied(const GateEvidence& e, const GatePlan& p) {
  return run_check(check_settings_applied, e, p);
}

void expect_mismatch(const CheckResult& r, const std::string& text) {
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.unobservable.empty());
  EXPECT_NE(r.message.find(text), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("bigmac-bringup audit"), std::string::npos) << r.message;
  EXPECT_EQ(r.certain_at, -1);
  EXPECT_FALSE(r.evidence.empty());
}

TEST(SettingsApplied, AHealthyRunReportsEveryValueAsAsked) {
  const CheckResult r = applied(single_evidence(3), plan("single"));
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(SettingsApplied, WorldSize) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].runs[0].world_size = 2;
  expect_mismatch(applied(e, plan("single")),
                  "world_size: the gate asked for 1, rank 0 ran with 2; write it as "
                  "launch.nproc_per_node in [launch] (launch layer");
}

TEST(SettingsApplied, PipelineSize) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].layouts[0].num_stages = 2;
  expect_mismatch(applied(e, plan("single")),
                  "pp: the gate asked for 1, rank 0 ran with 2; write it as parallel.pp_size in "
                  "[parallel] (schedule layer");
}

TEST(SettingsApplied, TensorParallelSizeImpliedByTheOthers) {
  GateEvidence e;
  for (int rank = 0; rank < 4; ++rank)
    e.add_rank(rank, healthy_rank(rank, 4, 3, rank == 0, 2, 1, 2), clean_exit());
  for (RankEvidence& r : e.ranks) r.layouts[0].dp_size = 2;
  const CheckResult r = applied(e, plan("dp"));
  expect_mismatch(r, "tp: the gate asked for 1, rank 0 ran with 2");
}

TEST(SettingsApplied, DataParallelSizeSaysItIsDerived) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].batches[0].dp = 2;
  expect_mismatch(applied(e, plan("single")),
                  "dp: the gate asked for 1, rank 0 ran with 2; dp is derived");
}

TEST(SettingsApplied, MicroBatchSize) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].batches[0].micro_batch_size = 4;
  expect_mismatch(applied(e, plan("single")),
                  "micro_batch_size: the gate asked for 2, rank 0 ran with 4; write it as "
                  "train.micro_batch_size in [train] (schedule layer");
}

TEST(SettingsApplied, GradientAccumulation) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].batches[0].grad_accum = 1;
  expect_mismatch(applied(e, plan("single")),
                  "grad_accum: the gate asked for 4, rank 0 ran with 1; write it as "
                  "train.gradient_accumulation_steps");
}

TEST(SettingsApplied, SequenceLength) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].batches[0].seq_length = 64;
  expect_mismatch(applied(e, plan("single")),
                  "seq_length: the gate asked for 32, rank 0 ran with 64; write it as "
                  "train.seq_length");
}

TEST(SettingsApplied, SplitPoints) {
  const GatePlan p = plan("pp2");
  ASSERT_EQ(p.config.model.split_points.size(), 1u);
  GateEvidence e = pipeline_evidence(2, 4, 3, "1f1b");
  const int split = p.config.model.split_points[0];
  for (RankEvidence& r : e.ranks) {
    for (logs::LayoutRecord& l : r.layouts) {
      if (l.stage == 1) l.first_layer = split + 1;
    }
  }
  expect_mismatch(applied(e, p), fmt::format("split_points: the gate asked for [{}], rank 1 ran "
                                             "with [{}]; write it as model.split_points in "
                                             "[model] (model layer",
                                             split, split + 1));
}

TEST(SettingsApplied, Seed) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].runs[0].seed = 7;
  expect_mismatch(applied(e, plan("single")),
                  "seed: the gate asked for 1234, rank 0 ran with 7; write it as train.seed in "
                  "[train]");
}

// A trainer that prints only seed 001's effective-configuration line, no contract events.
GateEvidence cfg_only_evidence(const GatePlan& p) {
  GateEvidence e = single_evidence(3);
  RankEvidence& r = e.ranks[0];
  r.runs.clear();
  r.pg_ready.clear();
  r.batches.clear();
  r.layouts.clear();
  logs::SettingsRecord cfg;
  cfg.at = logs::RecordOrigin{0, 1, 0};
  cfg.world_size = 1;
  cfg.pp = 1;
  cfg.tp = 1;
  cfg.dp = 1;
  cfg.micro_batch_size = p.config.train.micro_batch_size;
  cfg.grad_accum = p.config.train.gradient_accumulation_steps;
  cfg.seq_length = p.config.train.seq_length;
  cfg.seed = p.config.train.seed;
  r.settings.push_back(cfg);
  return e;
}

TEST(SettingsApplied, ACfgLineAloneMakesEveryValueObservable) {
  const GatePlan p = plan("single");
  const CheckResult r = applied(cfg_only_evidence(p), p);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_TRUE(r.unobservable.empty()) << r.message;
}

TEST(SettingsApplied, ACfgLineThatDisagreesIsAMismatch) {
  const GatePlan p = plan("single");
  GateEvidence e = cfg_only_evidence(p);
  e.ranks[0].settings[0].micro_batch_size = p.config.train.micro_batch_size + 1;
  expect_mismatch(applied(e, p),
                  fmt::format("micro_batch_size: the gate asked for {}, rank 0 ran with {}",
                              p.config.train.micro_batch_size,
                              p.config.train.micro_batch_size + 1));
}

TEST(SettingsApplied, ValuesNoRankReportsAreUnobservable) {
  GateEvidence e = single_evidence(3);
  e.ranks[0].runs.clear();
  e.ranks[0].pg_ready.clear();
  const CheckResult r = applied(e, plan("single"));
  EXPECT_FALSE(r.passed);
  std::vector<std::string> fields;
  for (const MissingField& m : r.unobservable) fields.push_back(m.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"world_size", "tp", "seed"})) << r.message;
}

}  // namespace
}  // namespace bigmac::gates
