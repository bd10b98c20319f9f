// The band comparison policy (issue 14 item 6): the baseline's own noise sets the tolerance of
// a smoothed curve, so a curve that is statistically the baseline's passes and a divergence
// fails, once confirmed.
#include "baseline/band.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "baseline/comparison.h"

namespace bigmac::baseline {
namespace {

// A falling loss curve 2·e^(-step/6) + 0.5 with relative noise of `noise` drawn from `seed`.
std::vector<SeriesValue> noisy_curve(unsigned seed, double noise, int steps = 20) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, noise);
  std::vector<SeriesValue> out;
  for (int i = 0; i < steps; ++i) {
    const double clean = 2.0 * std::exp(-i / 6.0) + 0.5;
    out.push_back({i, clean * std::exp(normal(gen))});
  }
  return out;
}

std::vector<double> values_of(const std::vector<SeriesValue>& s) {
  std::vector<double> out;
  for (const SeriesValue& v : s) out.push_back(v.value);
  return out;
}

TEST(SeriesNoise, MeasuresRelativeNoiseOfAPositiveSeries) {
  const SeriesNoise noise = series_noise(values_of(noisy_curve(1, 0.2, 200)), 5);
  EXPECT_TRUE(noise.log_scale);
  EXPECT_EQ(noise.residuals, 200u);
  EXPECT_NEAR(noise.sigma, 0.2, 0.05);
}

TEST(SeriesNoise, IsZeroForAnExponentialDecayAndUnmeasuredForAShortOne) {
  // A straight line in log space: only the truncated windows at the two ends leave residuals,
  // and the median passes over them.
  std::vector<double> decay;
  for (int i = 0; i < 20; ++i) decay.push_back(3.0 * std::exp(-i / 6.0));
  EXPECT_NEAR(series_noise(decay, 5).sigma, 0.0, 1e-12);
  EXPECT_GT(series_noise(values_of(noisy_curve(1, 0.0)), 5).sigma,
            0.0);  // a bend reads as a little noise
  const SeriesNoise short_series = series_noise(std::vector<double>{1, 2, 3, 4, 5}, 5);
  EXPECT_EQ(short_series.residuals, 0u);
  EXPECT_EQ(short_series.sigma, 0.0);
}

TEST(SeriesNoise, UsesTheSeriesUnitsWhenAValueIsNotPositive) {
  const SeriesNoise noise = series_noise(std::vector<double>{0, 1, -1, 1, -1, 1, -1, 1}, 3);
  EXPECT_FALSE(noise.log_scale);
  EXPECT_GT(noise.sigma, 0.5);
}

TEST(CompareBand, AnotherDrawOfTheSameCurveStaysInside) {
  const auto reference = noisy_curve(1, 0.2);
  for (unsigned seed = 2; seed < 12; ++seed) {
    const BandComparison c = compare_band(reference, noisy_curve(seed, 0.2), {}, 1e-4);
    EXPECT_FALSE(c.first_divergent) << "seed " << seed;
    EXPECT_EQ(c.judged.size(), reference.size());
    EXPECT_EQ(c.unjudged, 0);
  }
}

TEST(CompareBand, AStepByStepComparisonOfTheSameDrawsFails) {
  // What the band is for: the same two curves are far apart step by step.
  const auto reference = noisy_curve(1, 0.2);
  const auto other = noisy_curve(2, 0.2);
  const Tolerance relative{Policy::kRelative, 1e-4, 0, 10};
  EXPECT_FALSE(within_tolerance(other[0].value, reference[0].value, relative));
}

// The curve until `from`, then growing ×1.5 a step: a learning rate past stability.
std::vector<SeriesValue> diverging(std::vector<SeriesValue> s, std::size_t from) {
  for (std::size_t i = from; i < s.size(); ++i) {
    s[i].value = s[from - 1].value * std::pow(1.5, static_cast<double>(i - from + 1));
  }
  return s;
}

TEST(CompareBand, ADivergenceFailsOnceConfirmed) {
  const auto reference = noisy_curve(1, 0.2);
  const BandComparison c = compare_band(reference, diverging(noisy_curve(2, 0.2), 8), {}, 1e-4);
  ASSERT_TRUE(c.first_divergent);
  const BandPoint& first = c.judged[*c.first_divergent];
  EXPECT_GE(first.step, 6);
  EXPECT_LE(first.step, 14);
  EXPECT_GT(first.observed, first.high);
  // Three points outside in a row, the last of them reading two steps past itself.
  ASSERT_TRUE(c.confirmed_at);
  EXPECT_EQ(*c.confirmed_at, first.step + 2 + 2);
}

TEST(CompareBand, IsNotConfirmedBeforeTheStepsItsDefinitionNeeds) {
  const auto reference = noisy_curve(1, 0.2);
  const auto run = diverging(noisy_curve(2, 0.2), 8);
  const BandComparison whole = compare_band(reference, run, {}, 1e-4);
  ASSERT_TRUE(whole.confirmed_at);
  const auto upto = [&](std::int64_t last) {
    return std::vector<SeriesValue>(run.begin(), run.begin() + last + 1);
  };
  const BandComparison before = compare_band(reference, upto(*whole.confirmed_at - 1), {}, 1e-4);
  EXPECT_FALSE(before.first_divergent);
  EXPECT_GT(before.unjudged, 0);
  const BandComparison at = compare_band(reference, upto(*whole.confirmed_at), {}, 1e-4);
  ASSERT_TRUE(at.first_divergent);
  EXPECT_EQ(at.judged[*at.first_divergent].step, whole.judged[*whole.first_divergent].step);
  EXPECT_EQ(at.confirmed_at, whole.confirmed_at);
}

TEST(CompareBand, ANonFiniteValueIsOutside) {
  auto run = noisy_curve(1, 0.2);
  for (std::size_t i = 10; i < run.size(); ++i) run[i].value = NAN;
  const BandComparison c = compare_band(noisy_curve(1, 0.2), run, {}, 1e-4);
  ASSERT_TRUE(c.first_divergent);
  EXPECT_EQ(c.judged[*c.first_divergent].step, 8);  // its window reaches step 10
}

TEST(CompareBand, ANoiselessBaselineKeepsTheRelativeFloor) {
  const std::vector<SeriesValue> flat(10, SeriesValue{0, 1.0});
  std::vector<SeriesValue> reference, close, off;
  for (std::int64_t i = 0; i < 10; ++i) {
    reference.push_back({i, 1.0});
    close.push_back({i, 1.00001});
    off.push_back({i, 1.01});
  }
  EXPECT_FALSE(compare_band(reference, close, {}, 1e-4).first_divergent);
  EXPECT_TRUE(compare_band(reference, off, {}, 1e-4).first_divergent);
}

Baseline as_baseline(const std::vector<SeriesValue>& s) {
  Baseline b;
  for (const SeriesValue& v : s)
    b.steps.push_back(BaselineStep{v.step, v.value, 1.0, 1e-3, 8, {}, {}, {}});
  return b;
}

TEST(CompareMetricBand, JudgesTheSeriesAndIsCertainFromTheConfirmation) {
  ASSERT_TRUE(parse_policy("band"));
  Tolerance band{*parse_policy("band"), 1e-4, 0, 10};
  const Baseline reference = as_baseline(noisy_curve(1, 0.2));
  const MetricComparison same =
      compare_metric(reference, as_baseline(noisy_curve(3, 0.2)), Metric::kLoss, band);
  EXPECT_TRUE(same.within);
  EXPECT_FALSE(same.exact);
  EXPECT_GT(same.tolerance.band_noise.sigma, 0.1);
  EXPECT_NE(same.tolerance.describe().find("band 5σ"), std::string::npos);
  const MetricComparison off = compare_metric(
      reference, as_baseline(diverging(noisy_curve(3, 0.2), 8)), Metric::kLoss, band);
  EXPECT_FALSE(off.within);
  ASSERT_TRUE(off.first_divergent_step);
  EXPECT_TRUE(divergence_is_certain(off));
  EXPECT_EQ(divergence_certain_at(off), off.band->confirmed_at);
  EXPECT_GT(*divergence_certain_at(off), *off.first_divergent_step);
}

TEST(CompareMetricBand, OneStepAloneIsJudgedAgainstTheMeasuredNoise) {
  Tolerance band{Policy::kBand, 1e-4, 0, 10};
  band.band_noise = SeriesNoise{true, 0.1, 20};  // 5σ·√2 ≈ 0.71 in log units: ×2.03
  EXPECT_TRUE(within_tolerance(1.9, 1.0, band));
  EXPECT_FALSE(within_tolerance(2.1, 1.0, band));
  EXPECT_FALSE(within_tolerance(0.45, 1.0, band));
  const auto [low, high] = tolerance_range(1.0, band);
  EXPECT_NEAR(high, std::exp(5 * 0.1 * std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(low * high, 1.0, 1e-12);
}

}  // namespace
}  // namespace bigmac::baseline
