#include "gates/baseline_checks.h"

#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

class BaselineChecks : public ::testing::Test {
 protected:
  GatePlan plan_ = plan("dp", 3);
  GateEvidence run_ = single_evidence(3);
  baseline::Baseline base_ = baseline_of(single_evidence(3));
  const nlohmann::json params_ = {{"loss_policy", "relative"},
                                  {"loss_rel_tol", 1e-4},
                                  {"loss_route_back_first_step", "shapes"},
                                  {"loss_route_back_later", "dp"}};
};

TEST_F(BaselineChecks, LossMatchesExactly) {
  const CheckResult r = run_check(check_loss_vs_baseline, run_, plan_, &base_, params_);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("all 3 steps, exactly"), std::string::npos) << r.message;
}

TEST_F(BaselineChecks, TheConfiguredLossRanksSeriesIsTheOneCompared) {
  // Every rank prints its own loss; rank 1's is off from step 2.
  GateEvidence two = run_;
  RankEvidence other = two.ranks[0];
  other.rank = 1;
  for (logs::StepRecord& step : other.steps) step.at.rank = 1;
  other.steps[2].loss = 9.0;
  two.ranks.push_back(other);
  EXPECT_TRUE(run_check(check_loss_vs_baseline, two, plan_, &base_, params_).passed);
  two.loss_rank = 1;
  const CheckResult r = run_check(check_loss_vs_baseline, two, plan_, &base_, params_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("at step 2: 9 vs"), std::string::npos) << r.message;
}

TEST_F(BaselineChecks, NoBaselineOrNothingComparedFails) {
  EXPECT_FALSE(run_check(check_loss_vs_baseline, run_, plan_, nullptr, params_).passed);
  const baseline::Baseline empty;
  EXPECT_FALSE(run_check(check_loss_vs_baseline, run_, plan_, &empty, params_).passed);
  EXPECT_FALSE(run_check(check_grad_norm_vs_baseline, GateEvidence{}, plan_, &base_).passed);
}

TEST_F(BaselineChecks, DriftWithinTolerancePassesAndSaysSo) {
  run_.ranks[0].steps[1].loss = *run_.ranks[0].steps[1].loss * (1 + 1e-6);
  const CheckResult r = run_check(check_loss_vs_baseline, run_, plan_, &base_, params_);
  EXPECT_TRUE(r.passed);
  EXPECT_NE(r.message.find("drift"), std::string::npos) << r.message;
}

TEST_F(BaselineChecks, DivergenceRoutesBackByWhenItStarted) {
  GateEvidence late = run_;
  late.ranks[0].steps[2].loss = 9.0;
  const CheckResult r = run_check(check_loss_vs_baseline, late, plan_, &base_, params_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("diverges from the baseline at step 2: 9 vs 3.8"), std::string::npos)
      << r.message;
  EXPECT_EQ(r.route_back, "dp");
  EXPECT_EQ(r.evidence.at(0).rank, 0);
  // The same numbers as data, for the reports' chart of the failing metric.
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->metric, "loss");
  EXPECT_EQ(r.divergence->step, 2);
  EXPECT_EQ(r.divergence->observed, 9.0);
  EXPECT_EQ(r.divergence->baseline, *base_.steps[2].loss);
  EXPECT_EQ(r.divergence->tolerance.policy, baseline::Policy::kRelative);
  EXPECT_EQ(r.divergence->tolerance.rel_tol, 1e-4);
  EXPECT_FALSE(run_check(check_loss_vs_baseline, run_, plan_, &base_, params_).divergence);

  GateEvidence early = run_;
  early.ranks[0].steps[0].loss = 5.0;
  EXPECT_EQ(run_check(check_loss_vs_baseline, early, plan_, &base_, params_).route_back, "shapes");

  // Policies come from the params: magnitude ×10 accepts 9 vs 3.8.
  const nlohmann::json loose = {{"loss_policy", "magnitude"}, {"loss_factor", 10.0}};
  EXPECT_TRUE(run_check(check_loss_vs_baseline, late, plan_, &base_, loose).passed);
}

TEST_F(BaselineChecks, GradNormAndLr) {
  EXPECT_TRUE(run_check(check_grad_norm_vs_baseline, run_, plan_, &base_).passed);
  EXPECT_TRUE(run_check(check_lr_vs_baseline, run_, plan_, &base_).passed);
  for (auto& s : run_.ranks[0].steps) s.lr = *s.lr * 4;  // lr scaled by world size
  const CheckResult r =
      run_check(check_lr_vs_baseline, run_, plan_, &base_, {{"lr_route_back_first_step", "dp"}});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.route_back, "dp");
  EXPECT_NE(r.message.find("lr diverges from the baseline at step 0: 0.004 vs 0.001"),
            std::string::npos)
      << r.message;
}

TEST_F(BaselineChecks, ParamCountAcrossRanksStagesAndBaseline) {
  EXPECT_TRUE(run_check(check_param_count, run_, plan_, &base_).passed);
  EXPECT_FALSE(run_check(check_param_count, GateEvidence{}, plan_, &base_).passed);

  const GateEvidence pp = pipeline_evidence(2, 4, 1, "1f1b");
  const CheckResult tied = run_check(check_param_count, pp, plan("pp2"), &base_);
  EXPECT_TRUE(tied.passed) << tied.message;
  EXPECT_NE(tied.message.find("minus 100 tied duplicates: embedding.weight (stage 1)"),
            std::string::npos)
      << tied.message;

  GateEvidence untied = pp;
  untied.ranks[1].layouts[0].tied_duplicate_count = 0;
  const CheckResult r = run_check(check_param_count, untied, plan("pp2"), &base_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("stages hold 1100 parameters (stage 0: 900, stage 1: 200) minus 0 tied "
                           "duplicates = 1100, but the model has 1000"),
            std::string::npos)
      << r.message;

  baseline::Baseline bigger = base_;
  bigger.structure.param_count = 2000;
  EXPECT_FALSE(run_check(check_param_count, run_, plan_, &bigger).passed);
}

TEST_F(BaselineChecks, ParamDigest) {
  EXPECT_TRUE(run_check(check_param_digest, run_, plan_, &base_).passed);
  EXPECT_FALSE(run_check(check_param_digest, GateEvidence{}, plan_, &base_).passed);
  GateEvidence two = pipeline_evidence(2, 4, 1, "1f1b");
  EXPECT_TRUE(run_check(check_param_digest, two, plan_, &base_).passed);
  two.ranks[1].models[0].param_digest = "0ther";
  EXPECT_NE(run_check(check_param_digest, two, plan_, &base_).message.find("differ between ranks"),
            std::string::npos);
  baseline::Baseline other = base_;
  other.structure.param_digest = "1234";
  EXPECT_FALSE(run_check(check_param_digest, run_, plan_, &other).passed);
}

}  // namespace
}  // namespace bigmac::gates
