#include "gates/step_checks.h"

#include <gtest/gtest.h>

#include <cmath>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

class StepChecks : public ::testing::Test {
 protected:
  GatePlan plan_ = plan("single", 3);
  GateEvidence good_ = single_evidence(3);
  GateEvidence empty_;
  logs::StepRecord& step(std::size_t i) { return good_.ranks[0].steps[i]; }
};

TEST_F(StepChecks, FiniteLoss) {
  EXPECT_TRUE(run_check(check_finite_loss, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_finite_loss, empty_, plan_).passed);  // vacuous
  step(2).loss = NAN;
  const CheckResult r = run_check(check_finite_loss, good_, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("at step 2 (after 2 finite steps)"), std::string::npos) << r.message;
  ASSERT_EQ(r.evidence.size(), 1u);
  EXPECT_EQ(r.evidence[0].rank, 0);
  EXPECT_GT(r.evidence[0].line, 0);
}

TEST_F(StepChecks, FiniteLossAlsoReadsStageLosses) {
  good_.ranks[0].losses.push_back(logs::LossRecord{at(0, 9), 1, 0, 2, INFINITY});
  EXPECT_FALSE(run_check(check_finite_loss, good_, plan_).passed);
}

TEST_F(StepChecks, GradNormNonzero) {
  EXPECT_TRUE(run_check(check_grad_norm_nonzero, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_grad_norm_nonzero, empty_, plan_).passed);
  step(1).grad_norm = 0.0;
  const CheckResult r = run_check(check_grad_norm_nonzero, good_, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("grad_norm is 0 at step 1"), std::string::npos) << r.message;
}

TEST_F(StepChecks, GradNormStable) {
  GateEvidence e = single_evidence(6);
  EXPECT_TRUE(run_check(check_grad_norm_stable, e, plan_).passed);
  EXPECT_FALSE(
      run_check(check_grad_norm_stable, single_evidence(1), plan_).passed);  // nothing to compare
  EXPECT_FALSE(run_check(check_grad_norm_stable, empty_, plan_).passed);
  // Two growth steps are tolerated, three in a row are not; the message gives the whole run.
  double g = 1;
  for (std::size_t i = 1; i < 6; ++i) e.ranks[0].steps[i].grad_norm = (g *= i <= 2 ? 2 : 1);
  EXPECT_TRUE(run_check(check_grad_norm_stable, e, plan_).passed);
  for (std::size_t i = 1; i < 6; ++i) e.ranks[0].steps[i].grad_norm = (g *= 2);
  const CheckResult r = run_check(check_grad_norm_stable, e, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("5 consecutive steps (0 -> 5"), std::string::npos) << r.message;
  EXPECT_TRUE(
      run_check(check_grad_norm_stable, e, plan_, nullptr, {{"grad_norm_growth_factor", 3.0}})
          .passed);
}

TEST_F(StepChecks, StepSequence) {
  EXPECT_TRUE(run_check(check_step_sequence, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_step_sequence, empty_, plan_).passed);

  GateEvidence gap = single_evidence(3);
  gap.ranks[0].steps[1].global_step = 2;
  const CheckResult g = run_check(check_step_sequence, gap, plan_);
  EXPECT_FALSE(g.passed);
  EXPECT_NE(g.message.find("expected global_step 1 next, found 2 (gap of 1)"), std::string::npos)
      << g.message;

  GateEvidence dup = single_evidence(3);
  dup.ranks[0].steps[2].global_step = 1;
  EXPECT_NE(run_check(check_step_sequence, dup, plan_).message.find("logged twice"),
            std::string::npos);

  // The count must equal the baseline's (here 5), not only max_steps.
  const baseline::Baseline longer = baseline_of(single_evidence(5));
  const CheckResult c = run_check(check_step_sequence, good_, plan_, &longer);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.message.find("expected 5 (the baseline's)"), std::string::npos) << c.message;
}

// At the first gate a program whose epochs end before the gate's count sets the count, when
// it ended by itself and cleanly; stopped or crashed, too few steps stay a failure.
TEST_F(StepChecks, StepSequenceAcceptsAProgramThatEndedByItselfAtTheFirstGate) {
  const GatePlan twenty = plan("single", 20);
  const CheckResult ended = run_check(check_step_sequence, good_, twenty);
  EXPECT_TRUE(ended.passed) << ended.message;
  EXPECT_NE(ended.message.find("the program ended by itself after 3 of the 20 steps asked"),
            std::string::npos)
      << ended.message;
  GateEvidence crashed = single_evidence(3);
  crashed.ranks[0].exit = RankEnding{true, 1, {}, false, {}, false};
  EXPECT_FALSE(run_check(check_step_sequence, crashed, twenty).passed);
  // With a baseline the count is the baseline's, whatever the program does.
  const baseline::Baseline longer = baseline_of(single_evidence(5));
  EXPECT_FALSE(run_check(check_step_sequence, good_, twenty, &longer).passed);
}

TEST_F(StepChecks, SamplesPerStep) {
  EXPECT_TRUE(run_check(check_samples_per_step, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_samples_per_step, empty_, plan_).passed);

  // dp 4 with accum not rescaled: 2 × 4 × 4 = 32 against a baseline of 8.
  const baseline::Baseline base = baseline_of(good_);
  GateEvidence dp;
  for (int r = 0; r < 4; ++r) dp.add_rank(r, healthy_rank(r, 4, 3, r == 0, 2, 4, 4), clean_exit());
  const CheckResult wrong = run_check(check_samples_per_step, dp, plan("dp", 3), &base);
  EXPECT_FALSE(wrong.passed);
  EXPECT_NE(wrong.message.find("runs 32 samples/step (2 × 4 × 4) but the baseline has 8: set "
                               "train.gradient_accumulation_steps = 1"),
            std::string::npos)
      << wrong.message;

  GateEvidence lying = single_evidence(3);
  lying.ranks[0].batches[0].samples_per_step = 16;
  EXPECT_NE(run_check(check_samples_per_step, lying, plan_).message.find("but micro × accum × dp"),
            std::string::npos);
}

TEST_F(StepChecks, FieldsPresent) {
  EXPECT_TRUE(run_check(check_fields_present, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_fields_present, empty_, plan_).passed);
  // `done` logged by no rank of a clean run: the trainer does not log it (unobservable); lr
  // missing on one step only: it logs it, but not everywhere (a failure that also lists done).
  good_.ranks[0].dones.clear();
  const CheckResult blind = run_check(check_fields_present, good_, plan_);
  EXPECT_FALSE(blind.passed);
  ASSERT_EQ(blind.unobservable.size(), 1u);
  EXPECT_EQ(blind.unobservable[0].field, "done");
  step(1).lr.reset();
  const CheckResult r = run_check(check_fields_present, good_, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.unobservable.empty());
  EXPECT_NE(r.message.find("2 missing fields; first: step 1 has no lr"), std::string::npos)
      << r.message;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_EQ(r.evidence[1].text, "done is logged nowhere");
  EXPECT_FALSE(run_check(check_fields_present, single_evidence(3), plan("pp2", 3), nullptr,
                         {{"required_events", {"run", "mb"}}})
                   .passed);
  // Without pipeline stages there is no layout to log and no micro-batch schedule.
  EXPECT_TRUE(run_check(check_fields_present, single_evidence(3), plan_, nullptr,
                        {{"required_events", {"run", "mb", "layout"}}})
                  .passed);
}

TEST_F(StepChecks, FieldsPresentForgivesTheEndOfARankStoppedAtANonFiniteLoss) {
  good_.ranks[0].dones.clear();
  EXPECT_FALSE(run_check(check_fields_present, good_, plan_).passed);
  good_.ranks[0].exit.stopped_at_non_finite = true;
  EXPECT_TRUE(run_check(check_fields_present, good_, plan_).passed);
  good_.ranks[0].models.clear();  // what it should have logged before the loss still counts
  EXPECT_FALSE(run_check(check_fields_present, good_, plan_).passed);
}

}  // namespace
}  // namespace bigmac::gates
