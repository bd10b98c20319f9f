#include "gates/pipeline_checks.h"

#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

std::string text(const std::vector<std::pair<char, int>>& seq) {
  std::string out;
  for (const auto& [phase, mb] : seq) out += phase + std::to_string(mb) + " ";
  return out;
}

TEST(ScheduleSequence, OneFOneBAndGPipe) {
  EXPECT_EQ(text(schedule_sequence("1f1b", 0, 2, 4)), "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(text(schedule_sequence("1f1b", 1, 2, 4)), "F0 B0 F1 B1 F2 B2 F3 B3 ");
  EXPECT_EQ(text(schedule_sequence("gpipe", 0, 2, 2)), "F0 F1 B0 B1 ");
  EXPECT_EQ(text(schedule_sequence("1f1b", 0, 4, 2)), "F0 F1 B0 B1 ");  // warm-up capped at M
}

class PipelineChecks : public ::testing::Test {
 protected:
  GatePlan plan_ = plan("pp2");
  GateEvidence good_ = pipeline_evidence(2, 4, 2, "1f1b");
};

TEST_F(PipelineChecks, LayerCoverage) {
  const CheckResult ok = run_check(check_layer_coverage, good_, plan_);
  EXPECT_TRUE(ok.passed) << ok.message;
  EXPECT_NE(ok.message.find("stage 0: 0..1, stage 1: 2..3"), std::string::npos) << ok.message;
  EXPECT_FALSE(run_check(check_layer_coverage, GateEvidence{}, plan_).passed);

  GateEvidence overlap = good_;
  overlap.ranks[1].layouts[0].first_layer = 1;
  EXPECT_NE(run_check(check_layer_coverage, overlap, plan_)
                .message.find("layer 1 is held by 2 stages [0,1]"),
            std::string::npos);
  GateEvidence gap = good_;
  gap.ranks[1].layouts[0].last_layer = 2;
  EXPECT_NE(run_check(check_layer_coverage, gap, plan_).message.find("layer 3 is held by 0 stages"),
            std::string::npos);
  GateEvidence outside = good_;
  outside.ranks[1].layouts[0].last_layer = 4;  // split point out of range
  EXPECT_NE(run_check(check_layer_coverage, outside, plan_).message.find("claims layer 4"),
            std::string::npos);
  GateEvidence lonely = good_;
  lonely.ranks.pop_back();
  EXPECT_FALSE(run_check(check_layer_coverage, lonely, plan_).passed);
  GateEvidence empty_stage = good_;  // split point at num_layers: stage 0 took every layer
  empty_stage.ranks[0].layouts[0].last_layer = 3;
  empty_stage.ranks[1].layouts[0].first_layer = -1;
  empty_stage.ranks[1].layouts[0].last_layer = -1;
  const CheckResult empty = run_check(check_layer_coverage, empty_stage, plan_);
  EXPECT_FALSE(empty.passed);
  EXPECT_NE(empty.message.find("stage 1 owns no layer"), std::string::npos) << empty.message;
}

TEST_F(PipelineChecks, ScheduleOrder) {
  EXPECT_TRUE(run_check(check_schedule_order, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_schedule_order, single_evidence(), plan_).passed);  // no mb events

  GateEvidence swapped = good_;
  std::swap(swapped.ranks[0].micro_batches[1], swapped.ranks[0].micro_batches[2]);
  const CheckResult r = run_check(check_schedule_order, swapped, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("rank 0 stage 0 step 0: pass 1 is B0, 1f1b expects F1"),
            std::string::npos)
      << r.message;

  GateEvidence twice = good_;
  twice.ranks[1].micro_batches[1] = twice.ranks[1].micro_batches[0];
  EXPECT_NE(run_check(check_schedule_order, twice, plan_).message.find("F0 ran twice"),
            std::string::npos);

  GateEvidence gpipe = pipeline_evidence(2, 4, 1, "gpipe");
  EXPECT_FALSE(run_check(check_schedule_order, gpipe, plan_).passed);  // plan says 1f1b
}

// The probe reads the schedule the stages ran under (docs/pipelines.md): one the plan does not
// name is a setting that did not take; one the tool does not model is not judged on a guess.
TEST_F(PipelineChecks, ScheduleOrderReadsTheScheduleTheStagesRan) {
  GateEvidence named = good_;
  for (auto& r : named.ranks) r.layouts[0].schedule = "1f1b";
  EXPECT_TRUE(run_check(check_schedule_order, named, plan_).passed);
  GateEvidence gpipe = good_;
  gpipe.ranks[0].layouts[0].schedule = "gpipe";
  const CheckResult other = run_check(check_schedule_order, gpipe, plan_);
  EXPECT_FALSE(other.passed);
  EXPECT_TRUE(other.certain_at.has_value());
  EXPECT_NE(other.message.find("stage 0 ran under gpipe, the gate planned 1f1b"), std::string::npos)
      << other.message;
  GateEvidence interleaved = good_;
  interleaved.ranks[1].layouts[0].schedule = "ScheduleInterleaved1F1B";
  const CheckResult unmodelled = run_check(check_schedule_order, interleaved, plan_);
  EXPECT_FALSE(unmodelled.passed);
  ASSERT_EQ(unmodelled.unobservable.size(), 1u) << unmodelled.message;
  EXPECT_EQ(unmodelled.unobservable[0].field, "schedule_model");
}

// A stage whose layers the probe could not read leaves the coverage unjudged, with its reason.
TEST_F(PipelineChecks, LayerCoverageOfAStageWithUnknownLayersIsUnobservable) {
  GateEvidence unknown = good_;
  unknown.ranks[1].layouts[0].first_layer = -1;
  unknown.ranks[1].layouts[0].last_layer = -1;
  unknown.ranks[1].layouts[0].layers_unknown =
      "no parameter name of the stage carries a layer index";
  const CheckResult r = run_check(check_layer_coverage, unknown, plan_);
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.unobservable.size(), 1u) << r.message;
  EXPECT_EQ(r.unobservable[0].field, "layer_range");
  EXPECT_NE(r.message.find("stage 1 (rank 1): its layers are not known: no parameter name"),
            std::string::npos)
      << r.message;
}

TEST_F(PipelineChecks, NoStarvedStage) {
  EXPECT_TRUE(run_check(check_no_starved_stage, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_no_starved_stage, GateEvidence{}, plan_).passed);

  GateEvidence starved = good_;
  std::erase_if(starved.ranks[1].micro_batches,
                [](const logs::MicroBatchRecord& m) { return m.global_step == 1; });
  const CheckResult r = run_check(check_no_starved_stage, starved, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("stage 1 at step 1 ran 0 forward and 0 backward passes, expected 4"),
            std::string::npos)
      << r.message;

  GateEvidence idle = good_;
  idle.ranks[0].micro_batches.clear();
  EXPECT_NE(run_check(check_no_starved_stage, idle, plan_).message.find("stage 0 never ran"),
            std::string::npos);
}

}  // namespace
}  // namespace bigmac::gates
