#include "gates/early_stop.h"

#include <gtest/gtest.h>

#include "gates/pipeline_checks.h"
#include "gates/shape_checks.h"
#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

/// A six-step run's one rank four steps in: no `done`, no exit yet.
GateEvidence four_steps_in() {
  GateEvidence e = single_evidence(6);
  RankEvidence& r = e.ranks[0];
  r.steps.resize(4);
  r.heartbeats.clear();
  r.dones.clear();
  r.digests.clear();
  r.exit = RankEnding{};
  return e;
}

/// A dp gate four steps into a six-step run.
class EarlyStop : public ::testing::Test {
 protected:
  EarlyStop() {
    base_ = baseline_of(single_evidence(6));
    so_far_ = four_steps_in();
    RankEvidence& r = so_far_.ranks[0];
    // Rank 0 of the dp gate's 4 ranks, as settings_applied expects it (accumulation rescaled).
    r.runs[0].world_size = 4;
    r.batches[0].grad_accum = 1;
    r.batches[0].dp = 4;
    r.layouts[0].dp_size = 4;
  }

  GatePlan plan_ = plan("dp", 6);
  baseline::Baseline base_;
  GateEvidence so_far_;
};

TEST_F(EarlyStop, AHealthyRunThatIsNotOverYetIsNoCertainFailure) {
  // Missing steps, no `done`, ranks still running: all fail now, none for good.
  EXPECT_FALSE(evaluate_gate(spec("dp"), plan_, so_far_, &base_).passed);
  EXPECT_FALSE(certain_failure(spec("dp"), plan_, so_far_, &base_).has_value());
}

TEST_F(EarlyStop, ADivergedValueIsCertainAtItsStepAndTheEarliestStepDecides) {
  so_far_.ranks[0].steps[1].loss = 9.0;
  so_far_.ranks[0].steps[2].lr = *so_far_.ranks[0].steps[2].lr * 4;
  auto certain = certain_failure(spec("dp"), plan_, so_far_, &base_);
  ASSERT_TRUE(certain.has_value());
  // dp checks lr before loss, but the loss was off first: the answer must not depend on
  // whether the records of step 2 were in when the question was asked.
  EXPECT_EQ(certain->check, "loss_vs_baseline");
  EXPECT_EQ(certain->step, 1);
  EXPECT_NE(certain->message.find("loss diverges from the baseline at step 1"),
            std::string::npos)
      << certain->message;

  // At the same step, the gate's order names the first.
  so_far_.ranks[0].steps[1].lr = *so_far_.ranks[0].steps[1].lr * 4;
  certain = certain_failure(spec("dp"), plan_, so_far_, &base_);
  ASSERT_TRUE(certain.has_value());
  EXPECT_EQ(certain->check, "lr_vs_baseline");
  EXPECT_EQ(certain->step, 1);
}

TEST_F(EarlyStop, ABandDivergenceIsCertainOnlyOnceItsConfirmationIsLogged) {
  // Issue 16: `band` fails after the confirmation its definition needs. Three moving averages
  // (5 steps each) outside the band: the third reads steps 0..4.
  GateSpec band = spec("dp");
  band.params["loss_policy"] = "band";
  for (logs::StepRecord& s : so_far_.ranks[0].steps) s.loss = *s.loss * 9;
  EXPECT_FALSE(evaluate_gate(band, plan_, so_far_, &base_).passed);
  EXPECT_FALSE(certain_failure(band, plan_, so_far_, &base_).has_value())
      << "four steps cannot confirm a band divergence";

  so_far_.ranks[0].steps = single_evidence(6).ranks[0].steps;
  so_far_.ranks[0].steps.resize(5);
  for (logs::StepRecord& s : so_far_.ranks[0].steps) s.loss = *s.loss * 9;
  const auto certain = certain_failure(band, plan_, so_far_, &base_);
  ASSERT_TRUE(certain.has_value());
  EXPECT_EQ(certain->check, "loss_vs_baseline");
  EXPECT_EQ(certain->step, 4);
  EXPECT_NE(certain->message.find("leaves the baseline's band at step 0"), std::string::npos)
      << certain->message;
}

TEST_F(EarlyStop, AStepLoggedTwiceOrSkippedIsCertainWithoutABaseline) {
  const GateEvidence single = four_steps_in();  // the single gate's own rank

  GateEvidence twice = single;
  twice.ranks[0].steps.push_back(twice.ranks[0].steps.back());
  auto certain = certain_failure(spec("single"), plan("single", 6), twice, nullptr);
  ASSERT_TRUE(certain.has_value());
  EXPECT_EQ(certain->check, "step_sequence");
  EXPECT_EQ(certain->step, 3);

  GateEvidence gap = single;
  gap.ranks[0].steps.erase(gap.ranks[0].steps.begin() + 2);
  certain = certain_failure(spec("single"), plan("single", 6), gap, nullptr);
  ASSERT_TRUE(certain.has_value());
  EXPECT_EQ(certain->check, "step_sequence");
  EXPECT_EQ(certain->step, 3);
}

TEST_F(EarlyStop, WrongSamplesPerStepIsCertainBeforeTheFirstStep) {
  so_far_.ranks[0].steps.clear();
  so_far_.ranks[0].batches[0].grad_accum = 8;
  so_far_.ranks[0].batches[0].samples_per_step = 16;
  const auto certain = certain_failure(spec("dp"), plan_, so_far_, &base_);
  ASSERT_TRUE(certain.has_value());
  EXPECT_EQ(certain->check, "samples_per_step");
  EXPECT_EQ(certain->step, -1);
}

TEST_F(EarlyStop, EveryPolicyOfTodayFailsForGoodAtTheFirstDivergentStep) {
  so_far_.ranks[0].steps[1].loss = 9.0;
  for (const char* policy : {"exact", "relative", "magnitude"}) {
    GateSpec s = spec("dp");
    s.params["loss_policy"] = policy;
    s.params["loss_factor"] = 2.0;
    const auto certain = certain_failure(s, plan_, so_far_, &base_);
    ASSERT_TRUE(certain.has_value()) << policy;
    EXPECT_EQ(certain->check, "loss_vs_baseline") << policy;
    EXPECT_EQ(certain->step, 1) << policy;
  }
}

TEST_F(EarlyStop, StopOnDivergenceIsOnUnlessTheGateSaysOtherwise) {
  EXPECT_TRUE(stops_on_divergence(spec("dp")));
  GateSpec off = spec("dp");
  off.params["stop_on_divergence"] = false;
  EXPECT_FALSE(stops_on_divergence(off));
  off.params.erase("stop_on_divergence");
  EXPECT_TRUE(stops_on_divergence(off));
}

TEST_F(EarlyStop, AStoppedGateIsJudgedOnWhatItLoggedAndSaysWhereItStopped) {
  so_far_.ranks[0].steps[2].lr = *so_far_.ranks[0].steps[2].lr * 4;
  so_far_.ranks[0].exit =
      RankEnding{true, {}, "SIGTERM", false, "stopped by the orchestrator", false};
  const auto certain = certain_failure(spec("dp"), plan_, so_far_, &base_);
  ASSERT_TRUE(certain.has_value());
  const GateVerdict v = judge_stopped_early(evaluate_gate(spec("dp"), plan_, so_far_, &base_),
                                            *certain, so_far_, plan_, &base_);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.stopped_early,
            "stopped early at step 3 of 6: lr_vs_baseline failed for good at step 2");
  ASSERT_NE(v.first_failure(), nullptr);
  EXPECT_EQ(v.first_failure()->name, "lr_vs_baseline");
  EXPECT_EQ(v.route_back, v.first_failure()->route_back);
  EXPECT_NE(v.summary().find("dp failed (stopped early at step 3 of 6"), std::string::npos)
      << v.summary();
  // What failed only because the run was cut is not judged, and says what it saw.
  bool exit_not_judged = false;
  for (const std::string& n : v.not_run) {
    exit_not_judged |= n.rfind("exit_status: not judged, the gate stopped early", 0) == 0;
  }
  EXPECT_TRUE(exit_not_judged);
  for (const CheckResult& r : v.results) {
    EXPECT_TRUE(r.passed || r.certain_at.has_value()) << r.name << ": " << r.message;
  }
  // The verdict file keeps it.
  const GateVerdict back = verdict_from_json(to_json(v));
  EXPECT_EQ(back.stopped_early, v.stopped_early);
  EXPECT_EQ(back.first_failure()->certain_at, 2);
}

TEST_F(EarlyStop, TheVerdictNamesTheEarliestCertainFailureOfTheRecordsAtTheStop) {
  // Asked while step 1's loss was not in yet, the live decision named lr at step 2; the ranks
  // then stopped with step 1 logged. The verdict is the same as had it been asked later.
  so_far_.ranks[0].steps[2].lr = *so_far_.ranks[0].steps[2].lr * 4;
  so_far_.ranks[0].steps[1].loss = 9.0;
  so_far_.ranks[0].exit =
      RankEnding{true, {}, "SIGTERM", false, "stopped by the orchestrator", false};
  const CertainFailure live{"lr_vs_baseline", 2, "lr diverges from the baseline at step 2"};
  const GateVerdict v = judge_stopped_early(evaluate_gate(spec("dp"), plan_, so_far_, &base_),
                                            live, so_far_, plan_, &base_);
  ASSERT_NE(v.first_failure(), nullptr);
  EXPECT_EQ(v.first_failure()->name, "loss_vs_baseline");
  EXPECT_EQ(v.stopped_early,
            "stopped early at step 3 of 6: loss_vs_baseline failed for good at step 1");
  EXPECT_EQ(v.route_back, v.first_failure()->route_back);
  EXPECT_NE(v.summary().find("loss_vs_baseline"), std::string::npos) << v.summary();
}

TEST(CertainFailures, WhatALoggedRecordProvesIsFinalWhatIsStillMissingIsNot) {
  const GateEvidence pp = pipeline_evidence(2, 4, 1, "1f1b");
  const GatePlan pp2 = plan("pp2", 1);
  ASSERT_TRUE(run_check(check_layer_coverage, pp, pp2).passed);

  GateEvidence overlap = pp;
  overlap.ranks[1].layouts[0].first_layer = 1;  // layer 1 on both stages
  const CheckResult twice = run_check(check_layer_coverage, overlap, pp2);
  EXPECT_FALSE(twice.passed);
  EXPECT_EQ(twice.certain_at, -1) << "layouts come once, before step 0";

  GateEvidence missing = pp;
  missing.ranks[1].layouts.clear();  // stage 1's layout may still arrive
  const CheckResult absent = run_check(check_layer_coverage, missing, pp2);
  EXPECT_FALSE(absent.passed);
  EXPECT_FALSE(absent.certain_at.has_value()) << absent.message;

  GateEvidence middle = pp;
  logs::LossRecord loss;
  loss.at = at(0, 99);
  loss.global_step = 0;
  loss.stage = 0;
  middle.ranks[0].losses.push_back(loss);
  const CheckResult on_stage_0 = run_check(check_no_middle_stage_loss, middle, plan("shapes", 1));
  EXPECT_FALSE(on_stage_0.passed);
  EXPECT_EQ(on_stage_0.certain_at, 0);
}

}  // namespace
}  // namespace bigmac::gates
