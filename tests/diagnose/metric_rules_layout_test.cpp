// The metric rules that judge a layout's data order (issue 14) and ranks that trained alone,
// from synthetic records (helpers: metric_rules_support.h).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "metric_rules_support.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace metric_test;

// Issue 14 item 6: a loss curve with 20% step-to-step noise around 2·e^(-i/6) + 0.5, as a
// trainer with a per-rank seed logs it under two layouts (`shift` draws other noise).
double noisy_loss(int i, int shift) {
  const double noise[] = {0.13, -0.21, 0.05,  0.27, -0.08, -0.19, 0.22,  0.02, -0.25, 0.11,
                          0.18, -0.04, -0.16, 0.24, -0.12, 0.07,  -0.22, 0.15, 0.01,  -0.09};
  return (2.0 * std::exp(-i / 6.0) + 0.5) * std::exp(noise[(i + shift) % 20]);
}

baseline::Baseline layout_baseline() {
  baseline::Baseline b;
  std::vector<double> losses;
  for (int i = 0; i < 20; ++i) losses.push_back(noisy_loss(i, 0));
  set_series(b, baseline::Metric::kLoss, losses);
  b.structure.param_digest = "62a4a8d0f7bbf50f";
  return b;
}

logs::ModelRecord model(int rank, const std::string& digest) {
  logs::ModelRecord m;
  m.at = at(rank, 2);
  m.param_count = 9;
  m.param_digest = digest;
  return m;
}

std::vector<logs::Record> layout_run(const std::string& digest, double scale = 1.0) {
  std::vector<logs::Record> records = {model(0, digest)};
  for (int i = 0; i < 20; ++i) records.push_back(step(0, i, noisy_loss(i, 7) * scale));
  return records;
}

std::vector<Diagnosis> run_with(const std::vector<logs::Record>& records,
                                const baseline::Baseline& b, const MetricLimits& limits) {
  const std::vector<logs::RankLog> logs = rank_logs({{"rank0.log", records}});
  MetricInput input;
  input.logs = logs;
  input.baseline = &b;
  input.limits = limits;
  return apply_metric_rules(catalog(), input);
}

TEST(LayoutDependentData, StepZeroWithinTheBaselinesNoiseAndTheSameDigestIsNamed) {
  const baseline::Baseline b = layout_baseline();
  const auto all = run_with(layout_run(b.structure.param_digest), b, {});
  const Diagnosis* d = find(all, "loss_depends_on_layout");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->klass, "layout_dependent_data");
  EXPECT_EQ(d->gate, "single");
  EXPECT_THAT(d->symptom, HasSubstr("param_digest 62a4a8d0f7bbf50f"));
  EXPECT_THAT(d->cause, HasSubstr("batches depend on the layout (per-rank seed or sampler), so "
                                  "step-by-step comparison cannot hold"));
  EXPECT_THAT(d->fix, HasSubstr("make sample i depend only on the seed and i"));
  EXPECT_THAT(d->fix, HasSubstr("loss_policy = \"band\""));
  EXPECT_EQ(d->evidence.size(), 2u);
  EXPECT_EQ(find(all, "loss_wrong_from_first_step"), nullptr);
}

TEST(LayoutDependentData, OtherInitialParametersOrALossFarOutsideTheNoiseAreNot) {
  const baseline::Baseline b = layout_baseline();
  auto other_digest = run_with(layout_run("0123456789abcdef"), b, {});
  EXPECT_EQ(find(other_digest, "loss_depends_on_layout"), nullptr);
  EXPECT_NE(find(other_digest, "loss_wrong_from_first_step"), nullptr);
  auto far = run_with(layout_run(b.structure.param_digest, 50.0), b, {});
  EXPECT_EQ(find(far, "loss_depends_on_layout"), nullptr);
  EXPECT_NE(find(far, "loss_wrong_from_first_step"), nullptr);
  baseline::Baseline no_digest = b;
  no_digest.structure.param_digest.clear();
  EXPECT_FALSE(names(run_with(layout_run(b.structure.param_digest), no_digest, {}),
                     "loss_depends_on_layout"));
}

TEST(LayoutDependentData, AGateThatComparesAsABandJudgesTheSmoothedCurve) {
  const baseline::Baseline b = layout_baseline();
  MetricLimits band;
  band.loss.policy = baseline::Policy::kBand;
  // Statistically the baseline's curve: no loss finding at all.
  EXPECT_TRUE(run_with(layout_run(b.structure.param_digest), b, band).empty());
  // Growing ×1.5 a step from step 8: a divergence of the smoothed curve, after a match.
  std::vector<logs::Record> diverging = {model(0, b.structure.param_digest)};
  for (int i = 0; i < 20; ++i) {
    const double grown = i < 8 ? 1.0 : std::pow(1.5, i - 7);
    diverging.push_back(step(0, i, noisy_loss(i, 7) * grown));
  }
  const auto all = run_with(diverging, b, band);
  const Diagnosis* d = find(all, "loss_diverges_after_match");
  ASSERT_NE(d, nullptr) << all.size();
  EXPECT_EQ(find(all, "loss_depends_on_layout"), nullptr);
}

// The data-parallel facts the probe gives (gates/replica_checks.h judges them alike).
TEST(MetricRules, RanksThatTrainedAloneUnderTheProbeAreNotDistributed) {
  std::vector<logs::RankLog> logs(2);
  for (int r = 0; r < 2; ++r) {
    logs[static_cast<std::size_t>(r)].rank = r;
    logs[static_cast<std::size_t>(r)].probe_ran = true;
    logs[static_cast<std::size_t>(r)].step_digests.push_back({0, 0x10, 0x20, {r, 4, 0}, {}, {}});
  }
  MetricInput input;
  input.logs = logs;
  const std::vector<Diagnosis> all = apply_metric_rules(catalog(), input);
  const Diagnosis* d = find(all, "program_not_distributed");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->klass, "not_distributed");
  EXPECT_EQ(d->evidence.size(), 2u);
  // Replicas of a group that formed: the same samples, then parameters apart.
  for (logs::RankLog& l : logs) {
    l.pg_ready.push_back(logs::PgReadyRecord{{l.rank, 2, 0}, 1.0, 2, "gloo"});
    l.step_digests.push_back(
        {1, 0x11 + static_cast<std::uint64_t>(l.rank), 0x30, {l.rank, 6, 0}, {}, {}});
  }
  logs[1].step_digests[1].param = 0x31;
  input.logs = logs;
  const std::vector<Diagnosis> sync = apply_metric_rules(catalog(), input);
  EXPECT_FALSE(names(sync, "program_not_distributed"));
  EXPECT_TRUE(names(sync, "duplicate_samples"));      // step 0: both read 0x10
  EXPECT_TRUE(names(sync, "replicas_diverged"));      // step 1: 0x30 vs 0x31
  EXPECT_FALSE(names(sync, "replicas_start_apart"));  // no model digests logged
  // Replicas whose first `model` digests differ start apart, before any step.
  for (logs::RankLog& l : logs) {
    logs::ModelRecord m;
    m.at = {l.rank, 3, 0};
    m.param_digest = l.rank == 0 ? "aaaa" : "bbbb";
    l.models.push_back(m);
  }
  input.logs = logs;
  const std::vector<Diagnosis> apart = apply_metric_rules(catalog(), input);
  const Diagnosis* start = find(apart, "replicas_start_apart");
  ASSERT_NE(start, nullptr);
  EXPECT_NE(start->symptom.find("rank 1 starts from other parameters than rank 0 (bbbb vs aaaa)"),
            std::string::npos)
      << start->symptom;
  logs[1].models[0].param_digest = "aaaa";
  input.logs = logs;
  EXPECT_FALSE(names(apply_metric_rules(catalog(), input), "replicas_start_apart"));
}

}  // namespace
}  // namespace bigmac::diagnose
