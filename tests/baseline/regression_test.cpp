#include "baseline/regression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "baseline/baseline_diff.h"

namespace bigmac::baseline {
namespace {

Baseline reference() {
  Baseline b;
  b.name = "demo-cpu";
  b.fingerprint = {"0.1.0", "1.13.0", "", "none", "cpu", "float32", 1234, "cfg1", 1};
  b.recorded.commit = "abc123";
  b.recorded.trainer_digest = "t1";
  b.recorded.config = {{"train.lr", "0.003"}, {"train.warmup_steps", "5"}};
  b.structure.param_count = 1000;
  b.structure.param_digest = "p1";
  b.structure.input_shape = {2, 32};
  b.structure.input_dtype = "int64";
  for (int i = 0; i < 4; ++i) b.steps.push_back({i, 4.0 - 0.1 * i, 1.0, 1e-3, 8});
  b.structure.steps = 4;
  return b;
}

const ComparisonPolicy kPolicy{
    Tolerance{Policy::kRelative, 1e-5, 0, 10}, Tolerance{Policy::kRelative, 1e-4, 0, 10},
    Tolerance{Policy::kRelative, 1e-9, 0, 10}, Tolerance{Policy::kExact, 0, 0, 10}};

TEST(Regression, NoneWhenEveryValueMatches) {
  EXPECT_FALSE(find_regression(reference(), "baselines/demo-cpu.json", reference(), kPolicy));
}

// Issue 30 item 6: a NaN is the gate's own finding (finite_loss), not a regression whose
// "accept the change" recipe would record the fault as the new baseline.
TEST(Regression, NoneWhenTheRunLoggedANonFiniteValue) {
  Baseline run = reference();
  run.steps[2].loss = std::nan("");
  EXPECT_FALSE(find_regression(reference(), "baselines/demo-cpu.json", run, kPolicy));
  run = reference();
  run.steps[1].grad_norm = INFINITY;
  EXPECT_FALSE(find_regression(reference(), "baselines/demo-cpu.json", run, kPolicy));
}

TEST(Regression, FirstDivergentStepAndMetricWithWhatMoved) {
  Baseline run = reference();
  run.recorded.config["train.warmup_steps"] = "10";
  run.recorded.trainer_digest = "t2";
  run.fingerprint.torch_version = "2.1.0";
  run.steps[2].loss = 3.5;
  run.steps[1].lr = 2e-3;
  auto r = find_regression(reference(), "baselines/demo-cpu.json", run, kPolicy);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headline(), "regression against baselines/demo-cpu.json at step 1 (lr)");
  const std::string moved = r->what_moved();
  EXPECT_NE(moved.find("torch 1.13.0 → 2.1.0"), std::string::npos) << moved;
  EXPECT_NE(moved.find("config train.warmup_steps 5 → 10"), std::string::npos) << moved;
  EXPECT_NE(moved.find("trainer digest t1 → t2"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("train.lr"), std::string::npos) << moved;
  // The exact check and the tolerance check side by side, one line per metric.
  const auto lines = r->side_by_side();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("loss: exact: differs from step 2 | relative 1e-05: outside from "
                          "step 2: 3.5 vs baseline 3.8"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("grad_norm: exact: equal | relative 0.0001: within"), std::string::npos)
      << lines[1];
  EXPECT_NE(r->last_good().find("last passing commit: abc123"), std::string::npos);
}

TEST(Regression, SameInputsSayTheNumbersMovedWithTheSameInputs) {
  Baseline run = reference();
  run.steps[3].loss = 3.0;
  auto r = find_regression(reference(), "b.json", run, kPolicy);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->changes.empty());
  EXPECT_EQ(r->step, 3);
  EXPECT_NE(r->what_moved().find("the numbers moved with the same inputs"), std::string::npos);
  EXPECT_NE(r->what_moved().find("trainer digest"), std::string::npos);
}

TEST(Regression, StructureAloneIsARegressionBeforeTheFirstStep) {
  Baseline run = reference();
  run.steps.clear();  // stopped at the model event, before step 0
  run.structure.param_digest = "p2";
  auto r = find_regression(reference(), "b.json", run, kPolicy);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headline(), "regression against b.json before step 0 (param_digest)");
  EXPECT_NE(r->side_by_side()[0].find("nothing compared"), std::string::npos);
}

TEST(Regression, ABaselineWithoutStoredSettingsNamesTheDigestAndNoCommit) {
  Baseline old = reference();
  old.recorded = {};
  Baseline run = reference();
  run.fingerprint.config_digest = "cfg2";
  run.steps[0].loss = 5.0;
  auto r = find_regression(old, "b.json", run, kPolicy);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->changes.size(), 1u);
  EXPECT_EQ(r->changes[0].describe(),
            "config digest (the baseline keeps no settings to name the keys) cfg1 → cfg2");
  EXPECT_NE(r->last_good().find("names no commit"), std::string::npos);
  EXPECT_FALSE(r->trainer_known);
}

TEST(Regression, RecordedTravelsThroughTheFileAndOldFilesStayReadable) {
  const Baseline b = reference();
  auto back = baseline_from_json(to_json(b), "x.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(back->recorded.commit, "abc123");
  EXPECT_EQ(back->recorded.trainer_digest, "t1");
  EXPECT_EQ(back->recorded.config, b.recorded.config);
  nlohmann::json old = to_json(b);
  old.erase("recorded");
  old["fingerprint"].erase("python_version");
  auto read = baseline_from_json(old, "old.json");
  ASSERT_TRUE(read) << read.error().format();
  EXPECT_TRUE(read->recorded.commit.empty());
  EXPECT_TRUE(read->recorded.config.empty());
  old["recorded"] = "abc";
  auto bad = baseline_from_json(old, "bad.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().key, "recorded");
}

TEST(Regression, DiffShowsCommitTrainerAndChangedSettings) {
  Baseline b = reference();
  b.recorded.commit = "def456";
  b.recorded.config["train.lr"] = "0.006";
  const std::string text = format_diff(diff_baselines(reference(), b), "a.json", "b.json");
  EXPECT_NE(text.find("recorded: commit abc123 → def456"), std::string::npos) << text;
  EXPECT_NE(text.find("recorded: trainer digest t1 → t1"), std::string::npos) << text;
  EXPECT_NE(text.find("recorded: config train.lr 0.003 → 0.006"), std::string::npos) << text;
}

TEST(Regression, CiCommitComesFromTheCiEnvironment) {
  ::unsetenv("GITHUB_SHA");
  ::setenv("CI_COMMIT_SHA", "feedbeef", 1);
  EXPECT_EQ(ci_commit(), "feedbeef");
  ::setenv("GITHUB_SHA", "cafe", 1);
  EXPECT_EQ(ci_commit(), "cafe");
  ::unsetenv("GITHUB_SHA");
  ::unsetenv("CI_COMMIT_SHA");
}

}  // namespace
}  // namespace bigmac::baseline
