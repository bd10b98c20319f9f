// The step-series judgements that the gate checks and the diagnosis rules share (issue 17).

#include "baseline/step_series.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "logs/rank_log.h"

namespace bigmac::baseline {
namespace {

using ::testing::HasSubstr;

logs::StepRecord step(std::int64_t global_step, std::optional<double> loss,
                      std::optional<double> grad_norm = 1.0) {
  logs::StepRecord s;
  s.global_step = global_step;
  s.loss = loss;
  s.grad_norm = grad_norm;
  return s;
}

std::vector<logs::StepRecord> series(std::initializer_list<std::int64_t> steps) {
  std::vector<logs::StepRecord> out;
  for (std::int64_t s : steps) out.push_back(step(s, 1.0));
  return out;
}

TEST(SeriesOwner, IsTheLowestRankThatLoggedASteppedSeries) {
  std::vector<logs::RankLog> logs(3);
  logs[0].rank = 2;
  logs[0].steps = series({0, 1});
  logs[1].rank = 0;  // logged no step (a first pipeline stage)
  logs[2].rank = 1;
  logs[2].steps = series({0});
  const logs::RankLog* owner = series_owner(std::span<const logs::RankLog>(logs));
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->rank, 1);
  EXPECT_EQ(series_owner(std::span<const logs::RankLog>()), nullptr);
}

TEST(SeriesOwner, TheConfiguredLossRankSpeaksWhenItLoggedSteps) {
  std::vector<logs::RankLog> logs(3);
  for (int r = 0; r < 3; ++r) {
    logs[r].rank = r;
    logs[r].steps = series({0, 1});
  }
  const std::span<const logs::RankLog> all(logs);
  EXPECT_EQ(series_owner(all, 2)->rank, 2);
  EXPECT_EQ(series_owner(all, 0)->rank, 0);
  // A rank the world lacks, or one that logged no step, leaves it to the lowest that did.
  EXPECT_EQ(series_owner(all, 7)->rank, 0);
  logs[2].steps.clear();
  EXPECT_EQ(series_owner(all, 2)->rank, 0);
  EXPECT_TRUE(owns_series_before(2, 0, 2));
  EXPECT_FALSE(owns_series_before(0, 2, 2));
  EXPECT_TRUE(owns_series_before(0, 1, 2));
}

TEST(GradNormGrowth, CountsRatiosAboveTheFactorInARow) {
  std::vector<logs::StepRecord> steps;
  for (double g : {1.0, 1.1, 2.0, 4.0, 8.0, 9.0}) {
    steps.push_back(step(static_cast<std::int64_t>(steps.size()), 1.0, g));
  }
  const GrowthScan three = scan_grad_norm_growth(steps, GrowthRule{1.5, 3});
  ASSERT_TRUE(three.growth);
  EXPECT_EQ(three.growth->before, 1u);  // 1.1 -> 2.0 -> 4.0 -> 8.0
  EXPECT_EQ(three.growth->last, 4u);    // 8.0 -> 9.0 ends it
  EXPECT_EQ(three.compared, 5);
  EXPECT_DOUBLE_EQ(three.largest_ratio, 2.0);
  EXPECT_FALSE(scan_grad_norm_growth(steps, GrowthRule{1.5, 4}).growth);
  EXPECT_FALSE(scan_grad_norm_growth(steps, GrowthRule{2.5, 1}).growth);
}

TEST(GradNormGrowth, AMissingValueBreaksTheRun) {
  std::vector<logs::StepRecord> steps = {step(0, 1, 1), step(1, 1, 2), step(2, 1, std::nullopt),
                                         step(3, 1, 8), step(4, 1, 16)};
  EXPECT_FALSE(scan_grad_norm_growth(steps, GrowthRule{1.5, 2}).growth);
  EXPECT_TRUE(scan_grad_norm_growth(steps, GrowthRule{1.5, 1}).growth);
}

TEST(NonFiniteLoss, TheFirstNonFiniteLossOrAnUnloggedLossWithANonFiniteNorm) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<logs::StepRecord> steps = {step(0, 2.0), step(1, inf), step(2, nan)};
  auto bad = first_non_finite_loss(steps);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->index, 1u);
  EXPECT_FALSE(bad->from_grad_norm);
  // Megatron prints no loss once it is NaN, but still the grad norm.
  std::vector<logs::StepRecord> megatron = {step(0, 2.0), step(1, std::nullopt, nan)};
  bad = first_non_finite_loss(megatron);
  ASSERT_TRUE(bad);
  EXPECT_TRUE(bad->from_grad_norm);
  EXPECT_FALSE(first_non_finite_loss(series({0, 1, 2})));
}

TEST(StepSequence, FindsARepeatAndAGap) {
  auto repeated = scan_step_sequence(series({0, 1, 1, 2}));
  ASSERT_TRUE(repeated.broken);
  EXPECT_EQ(repeated.broken->kind, SequenceBreak::kRepeated);
  EXPECT_EQ(repeated.broken->found, 1);
  EXPECT_EQ(repeated.in_order, 2);
  auto gap = scan_step_sequence(series({0, 1, 2, 4}));
  ASSERT_TRUE(gap.broken);
  EXPECT_EQ(gap.broken->kind, SequenceBreak::kUnexpected);
  EXPECT_EQ(gap.broken->expected, 3);
  EXPECT_EQ(gap.broken->found, 4);
  EXPECT_FALSE(scan_step_sequence(series({0, 1, 2, 3})).broken);
}

TEST(StepSequence, AnIntervalLogIsInOrderAndItsOwnGapsStillCount) {
  auto every_ten = scan_step_sequence(series({9, 19, 29, 39}));
  EXPECT_EQ(every_ten.interval, 10);
  EXPECT_FALSE(every_ten.broken);
  EXPECT_EQ(every_ten.in_order, 4);
  auto missing = scan_step_sequence(series({9, 19, 29, 49}));
  ASSERT_TRUE(missing.broken);
  EXPECT_EQ(missing.broken->expected, 39);
  // Starting at or above the stride is not an interval log: steps 0..9 are missing.
  EXPECT_EQ(scan_step_sequence(series({10, 20, 30})).interval, 1);
}

TEST(SamplesPerStepFix, NamesTheSettingThatKeepsTheGlobalBatch) {
  EXPECT_THAT(samples_per_step_fix(32, 4, 8, 2),
              HasSubstr("set train.gradient_accumulation_steps = 4 for dp 2"));
  EXPECT_THAT(samples_per_step_fix(32, 3, 8, 2), HasSubstr("set train.micro_batch_size = 2"));
  EXPECT_THAT(samples_per_step_fix(30, 4, 4, 4), HasSubstr("cannot be split evenly over dp 4"));
  EXPECT_THAT(samples_per_step_fix(32, 0, 0, 0), HasSubstr("equal 32"));
}

}  // namespace
}  // namespace bigmac::baseline
