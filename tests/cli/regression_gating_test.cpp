// End-to-end: regression gating in CI (issue 21). A baseline is recorded from a real run of
// bigmac-train (with the commit a CI job would give), then a change in the data, the model's
// initialisation, the learning-rate schedule or the torch version (the baseline edited to
// another one) fails gate `single` in CI mode with a regression verdict that names what moved,
// routes back to `single` and leads the JUnit message and summary.md.

#include "run_all_fixture.h"

namespace {

using namespace bigmac::testing::e2e;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

class RegressionGating : public RunAll {
 protected:
  /// Records `root_/baseline.json` from a passing single gate, as CI would with GITHUB_SHA set.
  void record_baseline() {
    ProgramResult ref = bringup({"run-all", "-c", kDemo, "--run-dir", (root_ / "ref").string(),
                                 "--no-baseline", "--until", "single"});
    ASSERT_EQ(ref.exit_code, 0) << ref.out << ref.err;
    const std::vector<std::string> argv = argv_of(
        {"baseline", "record", (root_ / "ref").string(), "-c", kDemo, "-o", baseline_file()}, {});
    ProgramResult rec = run_program(argv, {{"GITHUB_SHA", kCommit}}, BIGMAC_SOURCE_DIR);
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
    EXPECT_THAT(rec.out, HasSubstr(std::string("commit ") + kCommit));
  }

  std::string baseline_file() const { return (root_ / "baseline.json").string(); }

  /// run-all --ci until single against the recorded baseline, with `sets`.
  ProgramResult gate_single(const std::vector<std::string>& sets) {
    return bringup({"run-all", "-c", kDemo, "--run-dir", (root_ / "run").string(), "--baseline",
                    baseline_file(), "--until", "single", "--ci"},
                   sets);
  }

  std::string read(const fs::path& path) const {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  /// The verdict every regression shows: headline in the terminal, JUnit and summary.md, the
  /// route back to single (never a later gate), the last passing commit, the accept commands.
  void expect_regression(const ProgramResult& r, const std::string& headline) {
    ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(gate_status("single"), "failed");
    EXPECT_EQ(gate_field("single", "route_back"), "single");
    EXPECT_THAT(r.out, HasSubstr("FAILED gate 1 single failed: " + headline)) << r.out;
    EXPECT_THAT(r.out, HasSubstr("Go back to: single")) << r.out;
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Go back to: shapes")));
    EXPECT_THAT(r.out, HasSubstr(std::string("last passing commit: ") + kCommit));
    EXPECT_THAT(r.out, HasSubstr("--until single --no-baseline"));
    EXPECT_THAT(r.out, HasSubstr("bigmac-bringup baseline diff " + baseline_file()));
    // Exact and tolerance results side by side.
    EXPECT_THAT(r.out, HasSubstr("| relative 1e-05: "));
    const std::string junit = read(root_ / "run" / "junit.xml");
    EXPECT_THAT(junit, HasSubstr("message=\"" + headline + ": ")) << junit;
    const std::string summary = read(root_ / "run" / "summary.md");
    EXPECT_EQ(summary.rfind("## ❌ " + headline, 0), 0u) << summary;
  }

  /// Rewrites the recorded baseline file through `edit`.
  template <class Edit>
  void edit_baseline(Edit edit) {
    std::ifstream in(baseline_file());
    nlohmann::json b = nlohmann::json::parse(in);
    in.close();
    edit(b);
    std::ofstream(baseline_file()) << b.dump(2);
  }

  std::string regression_at(int step, const std::string& metric) const {
    return "regression against " + baseline_file() + " at step " + std::to_string(step) + " (" +
           metric + ")";
  }
};

TEST_F(RegressionGating, ChangedDataIsARegressionNamingTheSetting) {
  record_baseline();
  ProgramResult r = gate_single({"faults.ragged_microbatch=true"});
  expect_regression(r, regression_at(0, "loss"));
  EXPECT_THAT(r.out, HasSubstr("config faults.ragged_microbatch false → true"));
}

TEST_F(RegressionGating, ChangedInitialisationIsARegressionNamingTheParameterDigest) {
  record_baseline();
  ProgramResult r = gate_single({"model.init_std=0.03"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("config model.init_std 0.02 → 0.03"));
  EXPECT_THAT(r.out, HasSubstr("changed: param_digest "));
  EXPECT_THAT(r.out, HasSubstr("regression against " + baseline_file()));
  EXPECT_EQ(gate_field("single", "route_back"), "single");
}

TEST_F(RegressionGating, ChangedLearningRateScheduleIsARegressionAtTheFirstStepItMoves) {
  record_baseline();
  // The demo warms up over 5 steps: 10 moves the lr from step 0, the loss one step later.
  ProgramResult r = gate_single({"train.warmup_steps=10"});
  expect_regression(r, regression_at(0, "lr"));
  EXPECT_THAT(r.out, HasSubstr("config train.warmup_steps 5 → 10"));
}

TEST_F(RegressionGating, BaselineOfAnotherTorchVersionIsARegressionNamingTorch) {
  record_baseline();
  // A baseline recorded under another torch whose numbers differ: edited as that torch would
  // have written it (another version, every loss 1% off).
  std::string torch;
  edit_baseline([&](nlohmann::json& b) {
    torch = b["fingerprint"]["torch_version"].get<std::string>();
    b["fingerprint"]["torch_version"] = "9.9.0";
    for (auto& step : b["steps"]) step["loss"] = step["loss"].get<double>() * 1.01;
  });
  ProgramResult r = gate_single({});
  expect_regression(r, regression_at(0, "loss"));
  EXPECT_THAT(r.out, HasSubstr("torch 9.9.0 → " + torch));
}

TEST_F(RegressionGating, SameInputsSayTheNumbersMovedWithTheSameInputs) {
  record_baseline();
  edit_baseline([](nlohmann::json& b) {
    b["steps"][3]["loss"] = b["steps"][3]["loss"].get<double>() * 1.01;
  });
  ProgramResult r = gate_single({});
  expect_regression(r, regression_at(3, "loss"));
  EXPECT_THAT(r.out, HasSubstr("the numbers moved with the same inputs"));
}

}  // namespace
