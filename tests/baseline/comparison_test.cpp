#include "baseline/comparison.h"

#include <gtest/gtest.h>

#include <cmath>

#include "baseline/baseline_diff.h"

namespace bigmac::baseline {
namespace {

Baseline series(std::vector<double> losses, std::string device = "cpu", std::int64_t world = 1) {
  Baseline b;
  b.fingerprint.device = std::move(device);
  b.fingerprint.world_size = world;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    b.steps.push_back(BaselineStep{static_cast<std::int64_t>(i),
                                   losses[i],
                                   1.0 + 0.01 * static_cast<double>(i),
                                   1e-3,
                                   8,
                                   {},
                                   {},
                                   {}});
  }
  return b;
}

TEST(Policy, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(*parse_policy("exact"), Policy::kExact);
  EXPECT_EQ(*parse_policy("magnitude"), Policy::kMagnitude);
  EXPECT_FALSE(parse_policy("close"));
}

TEST(ValuesByStep, IndexesByGlobalStepAndLeavesStepsWithoutAValueEmpty) {
  Baseline b;
  b.steps.push_back(BaselineStep{2, 3.5, {}, 1e-3, 8, {}, {}, {}});
  b.steps.push_back(BaselineStep{0, 4.0, 1.0, {}, 8, {}, {}, {}});
  b.steps.push_back(BaselineStep{-1, 9.0, {}, {}, {}, {}, {}, {}});
  b.steps.push_back(BaselineStep{2, 3.25, {}, {}, {}, {}, {}, {}});  // stored twice: the later
  const auto loss = values_by_step(b, Metric::kLoss);
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[0], 4.0);
  EXPECT_FALSE(loss[1]);
  EXPECT_EQ(loss[2], 3.25);
  // Every metric spans the baseline's steps, with or without its own values.
  const auto grad = values_by_step(b, Metric::kGradNorm);
  ASSERT_EQ(grad.size(), 3u);
  EXPECT_EQ(grad[0], 1.0);
  EXPECT_FALSE(grad[2]);
  EXPECT_TRUE(values_by_step(Baseline{}, Metric::kLr).empty());
}

TEST(CompareMetric, ExactRelativeMagnitude) {
  const Baseline ref = series({4.0, 3.0, 2.0});
  const Baseline obs = series({4.0, 3.0003, 2.5});
  auto exact = compare_metric(ref, obs, Metric::kLoss, {Policy::kExact, 0, 0, 1});
  EXPECT_FALSE(exact.within);
  EXPECT_EQ(exact.first_inexact_step, 1);
  EXPECT_EQ(exact.first_divergent_step, 1);
  auto rel = compare_metric(ref, obs, Metric::kLoss, {Policy::kRelative, 1e-3, 0, 1});
  EXPECT_EQ(rel.compared, 3);
  EXPECT_EQ(rel.first_divergent_step, 2);  // 2.5 vs 2.0 is 25 %
  EXPECT_NEAR(rel.max_rel_diff, 0.25, 1e-12);
  EXPECT_EQ(rel.max_rel_diff_step, 2);
  EXPECT_DOUBLE_EQ(rel.observed_value, 2.5);
  auto mag = compare_metric(ref, obs, Metric::kLoss, {Policy::kMagnitude, 0, 0, 2});
  EXPECT_TRUE(mag.within);
  EXPECT_FALSE(mag.exact);
  auto far =
      compare_metric(ref, series({4.0, 3.0, 50.0}), Metric::kLoss, {Policy::kMagnitude, 0, 0, 10});
  EXPECT_FALSE(far.within);
}

TEST(CompareMetric, OnARunStillGoingEveryPolicyOfTodayFailsForGoodAtItsFirstDivergentStep) {
  const Baseline ref = series({4.0, 3.0, 2.0, 1.5, 1.2});
  const Baseline two_steps_in = series({4.0, 3.6});
  for (const Tolerance& t :
       {Tolerance{Policy::kExact, 0, 0, 1}, Tolerance{Policy::kRelative, 1e-3, 0, 1},
        Tolerance{Policy::kMagnitude, 0, 0, 1.1}}) {
    const MetricComparison c = compare_metric(ref, two_steps_in, Metric::kLoss, t);
    EXPECT_EQ(c.missing, 3) << t.describe();
    EXPECT_TRUE(divergence_is_certain(c)) << t.describe();
  }
  // Within tolerance so far: whatever is missing, nothing is certain yet.
  const MetricComparison fine =
      compare_metric(ref, series({4.0, 3.0}), Metric::kLoss, {Policy::kRelative, 1e-3, 0, 1});
  EXPECT_FALSE(divergence_is_certain(fine));
}

TEST(CompareMetric, NonFiniteIsNeverWithin) {
  auto c = compare_metric(series({1.0, 1.0}), series({1.0, NAN}), Metric::kLoss,
                          {Policy::kMagnitude, 0, 0, 1e9});
  EXPECT_FALSE(c.within);
  EXPECT_EQ(c.first_divergent_step, 1);
}

TEST(CompareRuns, MatchDriftRegressionNothing) {
  const Baseline ref = series({4.0, 3.0, 2.0});
  EXPECT_EQ(compare_runs(ref, ref).outcome, Outcome::kMatch);

  const Comparison drift = compare_runs(ref, series({4.0, 3.00000001, 2.0}, "cpu", 4));
  EXPECT_EQ(drift.outcome, Outcome::kDrift);
  EXPECT_NE(drift.reason.find("reduction order: 4 ranks"), std::string::npos) << drift.reason;
  EXPECT_TRUE(drift.passed());

  const Comparison other = compare_runs(ref, series({4.0, 3.00000001, 2.0}, "cuda"));
  EXPECT_NE(other.reason.find("other fingerprint: device cuda vs cpu"), std::string::npos);

  const Comparison regression = compare_runs(ref, series({4.0, 3.5, 2.0}));
  EXPECT_EQ(regression.outcome, Outcome::kRegression);
  EXPECT_NE(regression.reason.find("loss diverges at step 1"), std::string::npos)
      << regression.reason;
  EXPECT_FALSE(regression.passed());

  const Comparison nothing = compare_runs(ref, Baseline{});
  EXPECT_EQ(nothing.outcome, Outcome::kNothing);
  EXPECT_FALSE(nothing.passed());
  EXPECT_NE(format_comparison(regression).find("first divergent step 1"), std::string::npos);
}

TEST(Diff, FirstDivergentStepAndMaxRelativeDifference) {
  const BaselineDiff same = diff_baselines(series({1, 2}), series({1, 2}));
  EXPECT_TRUE(same.identical());
  Baseline b = series({1, 2, 3});
  b.structure.param_count = 5;
  const BaselineDiff d = diff_baselines(series({1, 2, 3}), b);
  EXPECT_FALSE(d.identical());
  const std::string text =
      format_diff(diff_baselines(series({1, 2, 3}), series({1, 2.2, 3.3})), "a", "b");
  EXPECT_NE(text.find("loss"), std::string::npos);
  EXPECT_NE(text.find("first divergent step 1, max rel diff 0.1 at step 1"), std::string::npos)
      << text;
}

// D9: a log with 2 of the baseline's 20 steps, both equal, was called a match.
TEST(CompareRuns, MissingBaselineStepsAreNotAMatch) {
  std::vector<double> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back(4.0 - 0.1 * i);
  const Baseline ref = series(twenty);
  const Baseline two = series({twenty[0], twenty[1]});
  const Comparison c = compare_runs(ref, two);
  EXPECT_EQ(c.outcome, Outcome::kIncomplete);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.reason,
            "only 2 of the baseline's 20 steps with loss are in the log (first missing: step 2)");
  EXPECT_NE(format_comparison(c).find("comparison: incomplete"), std::string::npos);
  // A divergence still reads as the regression it is.
  Baseline diverging = two;
  diverging.steps[1].loss = 9.0;
  EXPECT_EQ(compare_runs(ref, diverging).outcome, Outcome::kRegression);
  EXPECT_EQ(compare_runs(ref, ref).outcome, Outcome::kMatch);
}

// Issue 30 item 7: 25 steps against a 20-step baseline were called a match.
TEST(CompareRuns, StepsTheBaselineLacksAreNotAMatch) {
  std::vector<double> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back(4.0 - 0.1 * i);
  std::vector<double> longer = twenty;
  for (int i = 20; i < 25; ++i) longer.push_back(2.0);
  const Comparison c = compare_runs(series(twenty), series(longer));
  EXPECT_EQ(c.outcome, Outcome::kOtherLength);
  EXPECT_FALSE(c.passed());
  EXPECT_NE(c.reason.find("the log has 5 steps the baseline's 20 have not (first: step 20)"),
            std::string::npos)
      << c.reason;
}

// Issue 30 item 19: a baseline of another device used for this run is named, even on a match.
TEST(CompareRuns, AnotherFingerprintIsNamedWhateverTheOutcome) {
  const Comparison c = compare_runs(series({4, 3}, "cuda"), series({4, 3}, "cpu"));
  EXPECT_EQ(c.outcome, Outcome::kMatch);
  EXPECT_EQ(c.other_fingerprint, "device cpu vs cuda");
  EXPECT_NE(format_comparison(c).find("note: the baseline was recorded with another fingerprint"),
            std::string::npos)
      << format_comparison(c);
}

}  // namespace
}  // namespace bigmac::baseline
