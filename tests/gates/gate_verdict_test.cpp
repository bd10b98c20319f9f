#include "gates/gate_verdict.h"

#include <gtest/gtest.h>

#include <cmath>

#include "baseline/baseline_commands.h"
#include "gates/step_checks.h"
#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

// A fixture folder of hand-written bigmac-log JSONL files, one per rank, all exiting 0.
GateEvidence fixture(const std::string& name) {
  GateEvidence e;
  const std::filesystem::path dir =
      std::filesystem::path(BIGMAC_SOURCE_DIR) / "tests/gates/fixtures" / name;
  for (int rank = 0;; ++rank) {
    const auto file = dir / ("rank" + std::to_string(rank) + ".jsonl");
    if (!std::filesystem::exists(file)) break;
    auto records = baseline::read_log_records(file);
    EXPECT_TRUE(records) << file;
    e.add_rank(rank, *records, clean_exit());
  }
  EXPECT_FALSE(e.ranks.empty()) << dir;
  return e;
}

TEST(GateVerdict, SingleWithoutBaselinePassesAndDefersComparisons) {
  const GateVerdict v =
      evaluate_gate(spec("single"), plan("single", 3), fixture("single_ok"), nullptr);
  EXPECT_TRUE(v.passed) << format_verdict(v);
  EXPECT_EQ(v.results.size(), 10u);
  ASSERT_EQ(v.not_run.size(), 3u);
  EXPECT_EQ(v.not_run[0], "loss_vs_baseline: no baseline yet; this run records one");
  EXPECT_TRUE(v.route_back.empty());
  EXPECT_EQ(v.summary(), "single passed (10 checks)");
}

TEST(GateVerdict, SingleAgainstItsOwnBaselineMatches) {
  const GateEvidence e = fixture("single_ok");
  const baseline::Baseline b = baseline_of(e);
  ASSERT_TRUE(baseline::check_recordable(b));
  const GateVerdict v = evaluate_gate(spec("single"), plan("single", 3), e, &b);
  EXPECT_TRUE(v.passed) << format_verdict(v);
  EXPECT_EQ(v.results.size(), 13u);
}

TEST(GateVerdict, DpWithAccumulationNotRescaledFailsSamplesPerStep) {
  const baseline::Baseline b = baseline_of(fixture("single_ok"));
  const GateVerdict v =
      evaluate_gate(spec("dp"), plan("dp", 3), fixture("dp_accum_not_rescaled"), &b);
  EXPECT_FALSE(v.passed);
  const CheckResult* f = v.first_failure();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name, "samples_per_step");
  EXPECT_NE(f->message.find("set train.gradient_accumulation_steps = 1"), std::string::npos)
      << f->message;
  EXPECT_EQ(v.route_back, "single");
  const std::string text = format_verdict(v);
  EXPECT_NE(text.find("FAIL samples_per_step"), std::string::npos) << text;
  EXPECT_NE(text.find("route back: gate single"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 line 3:"), std::string::npos) << text;
}

TEST(GateVerdict, TrimmedBoundaryFailsTheShapeChecks) {
  const baseline::Baseline b = baseline_of(fixture("single_ok"));
  const GateVerdict v =
      evaluate_gate(spec("shapes"), plan("shapes", 1), fixture("shapes_trimmed_boundary"), &b);
  EXPECT_FALSE(v.passed);
  std::vector<std::string> failed;
  for (const CheckResult& r : v.results) {
    if (!r.passed) failed.push_back(r.name);
  }
  // The fixture ran one step against a three-step baseline: the comparison says so too.
  EXPECT_EQ(failed,
            (std::vector<std::string>{"shape_chain", "fixed_seq_length", "loss_vs_baseline"}))
      << format_verdict(v);
  EXPECT_EQ(v.route_back, "shapes");
  EXPECT_NE(v.first_failure()->message.find("stage 1 enters [2,31,64]"), std::string::npos);
}

TEST(GateVerdict, NoEvidenceNeverPasses) {
  const GateVerdict v = evaluate_gate(spec("single"), plan("single", 3), GateEvidence{}, nullptr);
  EXPECT_FALSE(v.passed);
  for (const CheckResult& r : v.results) EXPECT_FALSE(r.passed) << r.name;
}

TEST(GateVerdict, JsonRoundTrip) {
  const baseline::Baseline b = baseline_of(fixture("single_ok"));
  const GateVerdict v =
      evaluate_gate(spec("dp"), plan("dp", 3), fixture("dp_accum_not_rescaled"), &b);
  const GateVerdict back = verdict_from_json(to_json(v));
  EXPECT_EQ(to_json(back), to_json(v));
  EXPECT_EQ(back.summary(), v.summary());
}

TEST(GateVerdict, JsonRoundTripKeepsADivergence) {
  GateVerdict v;
  v.gate_id = "dp";
  CheckResult r = fail("lr_vs_baseline", "lr diverges from the baseline at step 0");
  r.divergence = MetricDivergence{"lr", 0, 2.4e-3, 6e-4, {baseline::Policy::kMagnitude, 0, 0, 2}};
  v.results.push_back(r);
  v.results.push_back(pass("finite_loss", "ok"));
  v.results.back().warning = "a warning of a passed check";
  const GateVerdict back = verdict_from_json(to_json(v));
  EXPECT_EQ(back.results.at(1).warning, "a warning of a passed check");
  ASSERT_EQ(back.warnings().size(), 1u);
  EXPECT_TRUE(back.results.at(0).warning.empty());
  ASSERT_TRUE(back.results.at(0).divergence);
  const MetricDivergence& d = *back.results[0].divergence;
  EXPECT_EQ(d.metric, "lr");
  EXPECT_EQ(d.step, 0);
  EXPECT_EQ(d.observed, 2.4e-3);
  EXPECT_EQ(d.baseline, 6e-4);
  EXPECT_EQ(d.tolerance.policy, baseline::Policy::kMagnitude);
  EXPECT_EQ(d.tolerance.factor, 2);
  EXPECT_FALSE(back.results.at(1).divergence);
  EXPECT_FALSE(to_json(v)["checks"][1].contains("divergence"));
  EXPECT_FALSE(to_json(v)["checks"][0]["divergence"].contains("band"))
      << "band parameters written under another policy";
}

// Issue 30 item 6: a NaN at the step the loss became NaN was written as null and read back as
// "verdict.json is damaged: type must be number, but is null".
TEST(GateVerdict, JsonRoundTripKeepsANonFiniteDivergence) {
  GateVerdict v;
  v.gate_id = "single";
  CheckResult r = fail("loss_vs_baseline", "loss diverges from the baseline at step 3");
  r.divergence = MetricDivergence{"loss", 3, std::nan(""), 3.77, {}};
  v.results.push_back(r);
  const nlohmann::json written = nlohmann::json::parse(to_json(v).dump());
  EXPECT_EQ(written["checks"][0]["divergence"]["observed"], "nan");
  const GateVerdict back = verdict_from_json(written);
  ASSERT_TRUE(back.results.at(0).divergence);
  EXPECT_TRUE(std::isnan(back.results[0].divergence->observed));
  EXPECT_EQ(back.results[0].divergence->baseline, 3.77);
  // The null an earlier writer left reads as NaN too, never as an exception.
  nlohmann::json old = written;
  old["checks"][0]["divergence"]["observed"] = nullptr;
  EXPECT_TRUE(std::isnan(verdict_from_json(old).results.at(0).divergence->observed));
}

TEST(GateVerdict, JsonRoundTripKeepsABandAndTheNoiseItMeasured) {
  GateVerdict v;
  v.gate_id = "dp";
  CheckResult r = fail("loss_vs_baseline", "loss leaves the baseline's band at step 4");
  baseline::Tolerance band{baseline::Policy::kBand, 1e-4, 0, 10};
  band.band.window = 7;
  band.band.sigmas = 4.5;
  band.band.confirm = 2;
  band.band_noise.sigma = 0.03;
  band.band_noise.log_scale = true;
  band.band_noise.residuals = 18;
  r.divergence = MetricDivergence{"loss", 4, 3.9, 3.5, band};
  v.results.push_back(r);
  const GateVerdict back = verdict_from_json(to_json(v));
  ASSERT_TRUE(back.results.at(0).divergence);
  const baseline::Tolerance& t = back.results[0].divergence->tolerance;
  EXPECT_EQ(t.policy, baseline::Policy::kBand);
  EXPECT_EQ(t.band.window, 7);
  EXPECT_EQ(t.band.sigmas, 4.5);
  EXPECT_EQ(t.band.confirm, 2);
  EXPECT_EQ(t.band_noise.sigma, 0.03);
  EXPECT_TRUE(t.band_noise.log_scale);
  EXPECT_EQ(t.band_noise.residuals, 18u);
  EXPECT_EQ(t.describe(), band.describe());
}

}  // namespace
}  // namespace bigmac::gates

namespace bigmac::gates {
namespace {

TEST(GateEvidence, FromTheLogsModulesRankLogs) {
  const std::string dir =
      std::string(BIGMAC_SOURCE_DIR) + "/tests/gates/fixtures/dp_accum_not_rescaled/";
  auto loaded = logs::load_logs(
      {dir + "rank0.jsonl", dir + "rank1.jsonl", dir + "rank2.jsonl", dir + "rank3.jsonl"});
  ASSERT_TRUE(loaded) << loaded.error().format();
  GateEvidence e;
  for (const logs::RankLog& r : loaded->ranks) e.add_rank_log(r, testing::clean_exit());
  ASSERT_EQ(e.ranks.size(), 4u);
  EXPECT_EQ(e.ranks[3].rank, 3);
  EXPECT_EQ(e.ranks[0].steps.size(), 3u);
  EXPECT_EQ(e.ranks[2].pg_ready.size(), 1u);
  const CheckResult r = testing::run_check(check_samples_per_step, e, testing::plan("dp", 3));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("runs 32 samples/step"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace bigmac::gates
