// Each metric rule from synthetic records, worded by the built-in catalog.

#include "diagnose/metric_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "baseline/progress.h"
#include "metric_rules_support.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace metric_test;

TEST(MetricRules, LossNonFiniteNamesTheStep) {
  auto all = run({{"rank0.log", {step(0, 0, 4.1), step(0, 1, 3.9), step(0, 2, std::nan(""))}}});
  const Diagnosis* d = find(all, "loss_non_finite");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "loss is nan at step 2");
  EXPECT_EQ(d->gate, "single");
  ASSERT_EQ(d->evidence.size(), 1u);
  EXPECT_EQ(d->evidence[0].file, "rank0.log");
  EXPECT_EQ(d->evidence[0].line, 12);
}

TEST(MetricRules, GradNormGrowingStepOverStep) {
  std::vector<logs::Record> records;
  // More than ×1.5 a step for 3 steps in a row (the single gate's grad_norm_growth_*).
  for (int i = 0; i < 8; ++i) records.push_back(step(0, i, 4.0 - 0.1 * i, 0.5 * std::pow(1.6, i)));
  auto all = run({{"r.log", records}});
  const Diagnosis* d = find(all, "grad_norm_growing");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("step 0"));
  EXPECT_THAT(d->symptom, HasSubstr("step 7"));

  // Noisy but not growing: no finding.
  std::vector<logs::Record> noisy;
  for (int i = 0; i < 8; ++i) noisy.push_back(step(0, i, 4.0, i % 2 == 0 ? 1.0 : 1.2));
  EXPECT_FALSE(names(run({{"r.log", noisy}}), "grad_norm_growing"));
}

// One rank's steps in two files — torchrun's console copy (`[default0]:step 0 ...`) and the
// worker's stdout.log, a log file and the stream it was echoed to — are copies of one line: no
// step is logged twice. A step with another loss in the second file, or twice in one file, is.
TEST(MetricRules, AStepCopiedIntoTwoFilesIsOneStep) {
  const std::vector<logs::Record> steps = {step(0, 0, 4), step(0, 1, 3.5), step(0, 2, 3)};
  EXPECT_FALSE(names(run({{"console.log", steps}, {"0/stdout.log", steps}}), "step_repeated"));
  const std::vector<logs::Record> other = {step(0, 0, 4), step(0, 1, 9.5), step(0, 2, 3)};
  const auto two_runs = run({{"console.log", steps}, {"0/stdout.log", other}});
  const Diagnosis* d = find(two_runs, "step_repeated");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "global_step 1 is logged twice on rank 0");
}

TEST(MetricRules, GradNormZero) {
  auto all = run({{"r.log", {step(0, 0, 4.0, 0.0)}}});
  ASSERT_NE(find(all, "grad_norm_zero"), nullptr);
}

TEST(MetricRules, StepsMissingOrRepeated) {
  auto gap = run({{"r.log", {step(0, 0, 4), step(0, 1, 4), step(0, 3, 4)}}});
  const Diagnosis* g = find(gap, "step_gap");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->symptom, "global_step 2 is missing on rank 0: the next logged step is 3");
  EXPECT_EQ(find(gap, "step_repeated"), nullptr);

  auto repeat = run({{"r.log", {step(0, 0, 4), step(0, 1, 4), step(0, 1, 4), step(0, 2, 4)}}});
  const Diagnosis* r = find(repeat, "step_repeated");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->symptom, "global_step 1 is logged twice on rank 0");
  EXPECT_EQ(find(repeat, "step_gap"), nullptr);

  EXPECT_TRUE(run({{"r.log", {step(0, 0, 4), step(0, 1, 4), step(0, 2, 4)}}}).empty());
  // Megatron-style --log-interval 10 (iterations 10, 20, 30 are global_step 9, 19, 29).
  EXPECT_TRUE(run({{"r.log", {step(0, 9, 4), step(0, 19, 4), step(0, 29, 4)}}}).empty());
  // ...but a hole in an interval log still counts.
  EXPECT_TRUE(names(run({{"r.log", {step(0, 9, 4), step(0, 19, 4), step(0, 39, 4)}}}), "step_gap"));
}

// D16: a log may claim any int64 step; step + 1 and step differences overflowed (UBSan in the
// sanitizer build stops this test at metric_rules.cpp before the fix).
TEST(MetricRules, ExtremeStepNumbersAreJudgedWithoutOverflow) {
  auto extreme = [](std::int64_t global_step, std::int64_t line) {
    logs::StepRecord s;
    s.at = at(0, line);
    s.global_step = global_step;
    s.loss = 4.0;
    return s;
  };
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  auto top = run({{"r.log", {extreme(kMax, 1), extreme(kMax - 1, 2), extreme(kMax, 3)}}});
  const Diagnosis* gap = find(top, "step_gap");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->symptom,
            "global_step 0 is missing on rank 0: the next logged step is 9223372036854775807");
  ASSERT_NE(find(top, "step_repeated"), nullptr);
  auto span = run({{"r.log", {extreme(kMin, 1), extreme(kMax, 2), extreme(0, 3)}}});
  EXPECT_NE(find(span, "step_gap"), nullptr);
}

TEST(MetricRules, SamplesPerStepGivesTheExactSettingToChange) {
  logs::BatchRecord batch;
  batch.at = at(0, 2);
  batch.micro_batch_size = 2;
  batch.grad_accum = 4;
  batch.dp = 4;
  batch.samples_per_step = 32;
  baseline::Baseline baseline;
  set_series(baseline, baseline::Metric::kSamplesPerStep, {8});
  auto all = run({{"r.log", {batch}}}, &baseline);
  const Diagnosis* d = find(all, "samples_per_step_mismatch");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gate, "dp");
  EXPECT_THAT(d->symptom, HasSubstr("samples/step is 32, the baseline has 8"));
  EXPECT_THAT(
      d->fix,
      HasSubstr("set train.gradient_accumulation_steps = 1 for dp 4 to keep 8 samples/step"));

  // Micro-batch 4: accumulation cannot fix it; micro-batch can.
  batch.micro_batch_size = 4;
  batch.grad_accum = 1;
  batch.dp = 4;
  batch.samples_per_step = 16;
  auto micro = run({{"r.log", {batch}}}, &baseline);
  ASSERT_NE(find(micro, "samples_per_step_mismatch"), nullptr);
  EXPECT_THAT(find(micro, "samples_per_step_mismatch")->fix,
              HasSubstr("set train.micro_batch_size = 2 for dp 4"));

  batch.samples_per_step = 8;
  EXPECT_FALSE(names(run({{"r.log", {batch}}}, &baseline), "samples_per_step_mismatch"));
}

baseline::Baseline baseline_losses() {
  baseline::Baseline b;
  set_series(b, baseline::Metric::kLoss, {4.0, 3.8, 3.6, 3.4, 3.2, 3.0});
  set_series(b, baseline::Metric::kLr, std::vector<double>(6, 1e-3));
  return b;
}

// Issue 17: the diagnosis judges with the failing gate's own tolerance. A dp gate (loss_rel_tol
// 1e-4) that fails at a relative difference of 5e-4 gets the loss diagnosis; a gate that allows
// 1e-3 has nothing to explain.
TEST(MetricRules, LossJudgedWithTheGatesOwnTolerance) {
  const baseline::Baseline b = baseline_losses();
  std::vector<logs::Record> records;
  for (int i = 0; i < 4; ++i) {
    const double base = loss_at(b, static_cast<std::size_t>(i));
    records.push_back(step(0, i, i < 2 ? base : base * (1 + 5e-4)));
  }
  const std::vector<logs::RankLog> logs = rank_logs({{"r.log", records}});
  MetricInput input;
  input.logs = logs;
  input.baseline = &b;
  const std::vector<Diagnosis> at_dp_tolerance = apply_metric_rules(catalog(), input);
  const Diagnosis* d = find(at_dp_tolerance, "loss_diverges_after_match");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("step 2"));
  input.limits.loss.rel_tol = 1e-3;
  const std::vector<Diagnosis> at_wider_tolerance = apply_metric_rules(catalog(), input);
  EXPECT_EQ(find(at_wider_tolerance, "loss_diverges_after_match"), nullptr);
}

TEST(MetricRules, LossRightThenDivergingWithScaledLrRoutesToDp) {
  logs::BatchRecord batch;
  batch.dp = 4;
  // As in the demo: train.lr = 1e-3 with a 4-step warmup, so step 0 logs a quarter of it.
  baseline::Baseline b = baseline_losses();
  const std::vector<double> warmup = {2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3};
  set_series(b, baseline::Metric::kLr, warmup);
  std::vector<logs::Record> records = {batch};
  const double losses[] = {4.0, 3.8, 3.9, 4.4, 5.0, 6.0};
  for (int i = 0; i < 6; ++i)
    records.push_back(step(0, i, losses[i], 1.0, 4 * warmup[static_cast<std::size_t>(i)]));
  auto all = run({{"r.log", records}}, &b, nullptr, ConfiguredValues{1e-3});
  const Diagnosis* d = find(all, "lr_scaled_with_world_size");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gate, "dp");
  EXPECT_THAT(d->symptom, HasSubstr("diverges from step 2"));
  EXPECT_THAT(d->symptom, HasSubstr("lr at step 0 is 0.001, the baseline's 0.00025 (× 4)"));
  // The fix names the configured value and the factor, never the warmup value of step 0.
  EXPECT_EQ(d->fix,
            "keep train.lr at its configured 0.001 and do not multiply it by the data-parallel "
            "size (dp 4): the logged lr is 4× the baseline's; scale lr only when the global batch "
            "grows");
  EXPECT_THAT(d->cause, HasSubstr("multiplied by the data-parallel size (dp 4)"));

  // From logs alone (`diagnose`): no configured value to name, and still not the warmup one.
  auto bare = run({{"r.log", records}}, &b);
  const Diagnosis* e = find(bare, "lr_scaled_with_world_size");
  ASSERT_NE(e, nullptr);
  EXPECT_THAT(e->fix, HasSubstr("keep train.lr at the value the baseline ran with"));
  EXPECT_THAT(e->fix, HasSubstr("4×"));
  EXPECT_THAT(e->fix, Not(HasSubstr("0.00025")));
}

TEST(MetricRules, LrScaledWithTheWorldSizeWhenNoBatchEventSaysDp) {
  baseline::Baseline b = baseline_losses();
  LaunchFacts facts;
  facts.planned_world_size = 2;
  std::vector<logs::Record> records;
  const double losses[] = {4.0, 3.8, 3.9, 4.4};
  for (int i = 0; i < 4; ++i) records.push_back(step(0, i, losses[i], 1.0, 2e-3));
  auto all = run({{"r.log", records}}, &b, &facts, ConfiguredValues{1e-3});
  const Diagnosis* d = find(all, "lr_scaled_with_world_size");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->fix, HasSubstr("configured 0.001 and do not multiply it by the world size (2)"));
}

TEST(MetricRules, AGateStoppedAtTheScaledLrBeforeTheLossDivergedIsStillDiagnosed) {
  // The gate stopped at step 0's lr (a certain divergence): the loss had no time to follow.
  logs::BatchRecord batch;
  batch.dp = 4;
  baseline::Baseline b = baseline_losses();
  auto all = run({{"r.log", {batch, step(0, 0, 4.0, 1.0, 4e-3)}}}, &b);
  EXPECT_EQ(find(all, "lr_scaled_with_world_size"), nullptr);
  const Diagnosis* d = find(all, "lr_scaled_before_loss_diverged");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gate, "dp");
  EXPECT_THAT(d->symptom, HasSubstr("lr at step 0 is 0.004, the baseline's 0.001 (× 4)"));
  EXPECT_THAT(d->cause, HasSubstr("dp 4"));
  // An lr that differs by no factor of the world size is not blamed on it.
  EXPECT_FALSE(names(run({{"r.log", {batch, step(0, 0, 4.0, 1.0, 3e-3)}}}, &b),
                     "lr_scaled_before_loss_diverged"));
}

TEST(MetricRules, GradNormDivergingWhileTheLossMatchesPointsAtGradientSync) {
  // pp2 with the tied embedding's gradients not summed: the loss matches at step 0, grad_norm
  // does not, and the gate stopped there.
  baseline::Baseline b = baseline_losses();
  set_series(b, baseline::Metric::kGradNorm, std::vector<double>(6, 2.92003));
  auto all = run({{"r.log", {step(1, 0, 4.0, 2.73136, 1e-3)}}}, &b);
  const Diagnosis* d = find(all, "grad_norm_diverges_while_loss_matches");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gate, "pp2");
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_THAT(d->symptom, HasSubstr("from step 0 (2.73136 vs 2.92003)"));
  EXPECT_TRUE(run({{"r.log", {step(1, 0, 4.0, 2.92, 1e-3)}}}, &b).empty());
}

TEST(MetricRules, DataParallelGradNormIsWordedWithoutPipelinesAndASumIsNamed) {
  baseline::Baseline b = baseline_losses();
  set_series(b, baseline::Metric::kGradNorm, std::vector<double>(6, 0.5));
  ConfiguredValues dp_only;
  dp_only.dp = 2;
  dp_only.pp = 1;
  // Clipped to 1.0, measured 1.0 before clipping too at step 0 only: no pattern of a sum.
  auto odd = run({{"r.log", {step(0, 0, 4.0, 0.6)}}}, &b, nullptr, dp_only);
  const Diagnosis* d = find(odd, "grad_norm_diverges_dp");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(find(odd, "grad_norm_diverges_while_loss_matches"), nullptr);
  EXPECT_EQ(d->cause.find("pipeline"), std::string::npos) << d->cause;
  // Twice the baseline's before clipping at every step, with 2 replicas: summed, not averaged.
  std::vector<logs::Record> summed;
  for (int i = 0; i < 6; ++i) {
    logs::StepRecord s = step(0, i, loss_at(b, static_cast<std::size_t>(i)), 1.0);
    s.grad_norm_preclip = 1.0 + 0.01 * i;
    summed.push_back(s);
  }
  auto all = run({{"r.log", summed}}, &b, nullptr, dp_only);
  const Diagnosis* sum = find(all, "grad_norm_scaled_up_dp");
  ASSERT_NE(sum, nullptr);
  EXPECT_THAT(sum->symptom, HasSubstr("is 2.06× the baseline's over 6 steps"));
  EXPECT_THAT(sum->symptom, HasSubstr("before clipping"));
  EXPECT_THAT(sum->fix, HasSubstr("divide the all_reduce's sum"));
}

TEST(MetricRules, LossDivergingWithSameLrIsNamedWithoutBlamingLr) {
  baseline::Baseline b = baseline_losses();
  std::vector<logs::Record> records;
  const double losses[] = {4.0, 3.8, 3.9, 4.4};
  for (int i = 0; i < 4; ++i) records.push_back(step(0, i, losses[i]));
  auto all = run({{"r.log", records}}, &b);
  EXPECT_EQ(find(all, "lr_scaled_with_world_size"), nullptr);
  const Diagnosis* d = find(all, "loss_diverges_after_match");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("from step 2 (3.9 vs 3.6)"));
}

TEST(MetricRules, LossWrongFromFirstStepRoutesToShapes) {
  baseline::Baseline b = baseline_losses();
  auto all = run({{"r.log", {step(1, 0, 6.2), step(1, 1, 6.0)}}}, &b);
  const Diagnosis* d = find(all, "loss_wrong_from_first_step");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gate, "shapes");
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_EQ(find(all, "loss_diverges_after_match"), nullptr);
  // Within tolerance: nothing.
  EXPECT_TRUE(run({{"r.log", {step(1, 0, 4.0000001), step(1, 1, 3.8)}}}, &b).empty());
}

TEST(MetricRules, StageWithoutForwardNamesItsSplitPoint) {
  std::vector<LogRecords> logs = {
      {"rank0.log", {layout(0, 0, 2, 0, 3, 100), mb(0, 0, 0, 'F', 10), mb(0, 0, 1, 'F', 11)}},
      {"rank1.log", {layout(1, 1, 2, 4, 7, 100)}}};
  auto all = run(logs);
  const Diagnosis* d = find(all, "stage_without_forward");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "stage 1 (layers 4..7) logged no forward pass");
  EXPECT_THAT(d->fix, HasSubstr("starts at layer 4"));
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_EQ(d->gate, "pp2");
}

TEST(MetricRules, AStageWithoutLayersIsNamedFromItsLayoutAloneBeforeAnyMicroBatch) {
  // Stopped at the layout records (layer_coverage is certain before step 0): no micro-batch.
  std::vector<LogRecords> logs = {{"rank0.log", {layout(0, 0, 2, 0, 4, 100)}},
                                  {"rank1.log", {layout(1, 1, 2, -1, -1, 0)}}};
  auto all = run(logs);
  const Diagnosis* d = find(all, "stage_without_layers");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "stage 1 of 2 holds no layer (layers -1..-1)");
  EXPECT_THAT(d->fix, HasSubstr("model.split_points 1 strictly increasing values"));
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_EQ(d->gate, "pp2");
  EXPECT_EQ(d->klass, "parallel_layout");
  // With micro-batches logged, the empty stage keeps the more specific diagnosis alone.
  logs[0].records.push_back(mb(0, 0, 0, 'F', 10));
  all = run(logs);
  EXPECT_NE(find(all, "stage_without_layers"), nullptr);
  EXPECT_EQ(find(all, "stage_without_forward"), nullptr);
}

// Issue 29: an empty stage where layer_coverage finds it (baseline/layer_coverage.h): the first
// of every planned stage's layouts, never a guess from a stage that is missing.
TEST(MetricRules, AStageWithoutLayersIsTheOneLayerCoverageFinds) {
  const auto empty = [](int rank, int stage) { return layout(rank, stage, 3, -1, -1, 0); };
  auto all = run({{"rank0.log", {layout(0, 0, 3, 0, 7, 100)}},
                  {"rank1.log", {empty(1, 1)}},
                  {"rank2.log", {empty(2, 2)}}});
  const auto count = std::count_if(
      all.begin(), all.end(), [](const Diagnosis& d) { return d.id == "stage_without_layers"; });
  EXPECT_EQ(count, 1);
  ASSERT_NE(find(all, "stage_without_layers"), nullptr);
  EXPECT_EQ(find(all, "stage_without_layers")->failed_rank, 1);
  // Stage 2's layout is missing: layer_coverage fails on the stage count, not on stage 1.
  EXPECT_FALSE(
      names(run({{"rank0.log", {layout(0, 0, 3, 0, 7, 100)}}, {"rank1.log", {empty(1, 1)}}}),
            "stage_without_layers"));
}

TEST(MetricRules, StageParameterSumAgainstTheSingleTotal) {
  baseline::Baseline b;
  b.structure.param_count = 1000;
  auto doubled =
      run({{"r0", {layout(0, 0, 2, 0, 3, 600)}}, {"r1", {layout(1, 1, 2, 4, 7, 600)}}}, &b);
  const Diagnosis* d = find(doubled, "stage_param_sum_mismatch");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom,
              HasSubstr("1200 parameters together, the whole model has 1000 (difference +200)"));
  EXPECT_THAT(d->cause, HasSubstr("counted on two stages"));

  auto missing =
      run({{"r0", {layout(0, 0, 2, 0, 3, 500)}}, {"r1", {layout(1, 1, 2, 4, 7, 400)}}}, &b);
  ASSERT_NE(find(missing, "stage_param_sum_mismatch"), nullptr);
  EXPECT_THAT(find(missing, "stage_param_sum_mismatch")->cause,
              HasSubstr("100 parameters belong to no stage"));

  // Tied weights reported as duplicates are fine.
  auto tied =
      run({{"r0", {layout(0, 0, 2, 0, 3, 600, 200)}}, {"r1", {layout(1, 1, 2, 4, 7, 600)}}}, &b);
  EXPECT_EQ(find(tied, "stage_param_sum_mismatch"), nullptr);
}

// Issue 29: the stages and the total that param_count judges by (baseline/stage_layout.h).
TEST(MetricRules, StageParameterSumIsJudgedAsParamCountJudgesIt) {
  logs::ModelRecord whole;
  whole.at = at(0, 2);
  whole.param_count = 1200;
  // Stage 1 logged by its dp_rank 1 replica alone: still a stage of the sum.
  logs::LayoutRecord replica = layout(3, 1, 2, 4, 7, 700);
  replica.dp_rank = 1;
  auto all = run({{"r0", {whole, layout(0, 0, 2, 0, 3, 600)}}, {"r3", {replica}}});
  const Diagnosis* d = find(all, "stage_param_sum_mismatch");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("1300 parameters together, the whole model has 1200"));
  // Stages that sum to the model's own count are right even where the baseline has another
  // count: param_count names the model's difference from the baseline, not the stages'.
  baseline::Baseline b;
  b.structure.param_count = 1000;
  EXPECT_FALSE(names(
      run({{"r0", {whole, layout(0, 0, 2, 0, 3, 600)}}, {"r1", {layout(1, 1, 2, 4, 7, 600)}}}, &b),
      "stage_param_sum_mismatch"));
}

TEST(MetricRules, ALossOffTheLastStageIsAMiddleStagesLoss) {
  logs::LossRecord loss;
  loss.at = at(1, 9);
  loss.stage = 1;
  loss.global_step = 3;
  loss.value = 2.5;
  const std::vector<LogRecords> logs = {{"rank0.log", {layout(0, 0, 3, 0, 1, 10)}},
                                        {"rank1.log", {layout(1, 1, 3, 2, 3, 10), loss}},
                                        {"rank2.log", {layout(2, 2, 3, 4, 5, 10)}}};
  // From the logs alone the layouts name the last stage: 2.
  const auto all = run(logs);
  const Diagnosis* d = find(all, "middle_stage_loss");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_THAT(d->symptom, HasSubstr("stage 1 computed a loss at step 3; only the last stage (2)"));
  // Where the plan is known it decides, as no_middle_stage_loss judges: 2 stages end at 1.
  ConfiguredValues pp2;
  pp2.pp = 2;
  EXPECT_FALSE(names(run(logs, nullptr, nullptr, pp2), "middle_stage_loss"));
}

TEST(MetricRules, IdleStageSaysWhoItWaitsFor) {
  // Stage 1 ran a forward and a backward and stopped; stage 0 went on to forward 4
  // micro-batches, never pausing longer than the idle limit, and then waits for gradients stage
  // 1 never sends: stage 1 stopped for longer than the stall limit (60 s), waiting on stage 0.
  std::vector<LogRecords> logs = {
      {"rank0.log",
       {mb(0, 0, 0, 'F', 10), mb(0, 0, 1, 'F', 40), mb(0, 0, 2, 'F', 70), mb(0, 0, 3, 'F', 100)}},
      {"rank1.log", {mb(1, 1, 0, 'F', 11), mb(1, 1, 0, 'B', 12)}}};
  auto all = run(logs);
  const Diagnosis* d = find(all, "stage_idle");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("stage 1 (rank 1) did nothing for 88 s"));
  EXPECT_THAT(d->fix, HasSubstr("stage 0 (rank 0)"));
  EXPECT_EQ(std::count_if(all.begin(), all.end(),
                          [](const Diagnosis& x) { return x.id == "stage_idle"; }),
            1);
}

// A pause in the middle of a run is judged as the gate's no_idle_stage judges it (the same
// baseline::longest_idle over the same signs of work, with the gate's idle_limit_s): a stage
// idle for 45 s under a 30 s limit fails the check and is explained, never left unexplained
// because the diagnosis waited for 60 s.
TEST(MetricRules, AMidRunPauseBeyondTheGatesIdleLimitIsExplained) {
  const std::vector<logs::RankLog> logs = rank_logs(
      {{"rank0.log",
        {mb(0, 0, 0, 'F', 10), mb(0, 0, 1, 'F', 11), mb(0, 0, 0, 'B', 57), mb(0, 0, 1, 'B', 58)}},
       {"rank1.log",
        {mb(1, 1, 0, 'F', 10.8), mb(1, 1, 1, 'F', 11.8), mb(1, 1, 0, 'B', 12.5),
         mb(1, 1, 1, 'B', 13.5)}}});
  // Stage 0 waited from 11 s to 56.5 s (its next backward started): 45.5 s.
  const auto gap = baseline::longest_idle(baseline::signs_of_work(logs[0]));
  ASSERT_TRUE(gap.has_value());
  EXPECT_DOUBLE_EQ(gap->seconds(), 45.5);
  MetricInput input;
  input.logs = logs;
  input.limits.idle_limit_s = 30;
  const std::vector<Diagnosis> all = apply_metric_rules(catalog(), input);
  const Diagnosis* d = find(all, "stage_idle");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("stage 0 (rank 0) did nothing for 45.5 s"));
  // Judged at the moment it paused: both forwards done, no gradient yet from stage 1.
  EXPECT_THAT(d->cause, HasSubstr("stage 0 has done 2 forward and 0 backward passes and waits "
                                  "for gradients from stage 1 (rank 1)"));
  ASSERT_EQ(d->evidence.size(), 2u);
  EXPECT_EQ(d->evidence[0].file, "rank0.log");
  EXPECT_EQ(d->evidence[0].line, 101);  // mb 1's record, the last work before the pause
  EXPECT_THAT(d->evidence[1].text, HasSubstr("45.5 s later"));

  input.limits.idle_limit_s = 50;  // a gate that allows the pause: nothing to explain
  EXPECT_FALSE(names(apply_metric_rules(catalog(), input), "stage_idle"));
}

TEST(MetricRules, MoreThanOneCheckpointWriter) {
  logs::CheckpointRecord c0;
  c0.at = at(0, 50);
  c0.path = "ckpt/step10.pt";
  logs::CheckpointRecord c1 = c0;
  c1.at = at(1, 51);
  auto all = run({{"rank0.log", {c0}}, {"rank1.log", {c1}}});
  const Diagnosis* d = find(all, "multiple_checkpoint_writers");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "2 ranks wrote checkpoints (ranks 0, 1)");
  EXPECT_EQ(d->gate, "target");
  EXPECT_TRUE(run({{"rank0.log", {c0, c0}}}).empty());
  // One rank with two logs (its own and the probe's) is one writer, as the gate counts it.
  EXPECT_TRUE(run({{"rank0.log", {c0}}, {"probe-rank0.jsonl", {c0}}}).empty());
}

TEST(MetricRules, LauncherFactsWorldSizeEnvStallAndPort) {
  LaunchFacts facts;
  facts.planned_world_size = 4;
  facts.processes_started = 2;
  facts.env_mismatches.push_back({"MASTER_PORT", {{0, "29500"}, {1, "29501"}}});
  facts.stalled.push_back(stall(1, std::nullopt, 120));
  facts.port_holder = HeldPort{29500, 4321, "python3 train.py"};
  auto all = run({}, nullptr, &facts);
  const Diagnosis* world = find(all, "world_size_exceeds_processes");
  ASSERT_NE(world, nullptr);
  EXPECT_THAT(world->symptom, HasSubstr("WORLD_SIZE is 4 but only 2 processes were started"));
  const Diagnosis* env = find(all, "env_mismatch");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->symptom, "MASTER_PORT differs between ranks: rank 0: 29500, rank 1: 29501");
  ASSERT_NE(find(all, "rank_stalled"), nullptr);
  EXPECT_EQ(find(all, "rank_stalled")->failed_rank, 1);
  ASSERT_NE(find(all, "port_held_by_process"), nullptr);
  EXPECT_THAT(find(all, "port_held_by_process")->fix, HasSubstr("kill 4321"));
}

// Issue 30 item 5: with hang_rank=1:2 the watchdog lists rank 1 (never began step 2) first and
// the three ranks waiting in step 2 after it; the card named rank 0.
TEST(MetricRules, AStallIsDiagnosedAtTheRankTheWatchdogListsFirst) {
  LaunchFacts facts;
  launch::Stall waiting = stall(3, 1, 5.0);
  waiting.began_step = 2;
  facts.stalled = {stall(1, 1, 5.0), waiting, waiting};
  facts.stalled[2].rank = 0;
  auto all = run({}, nullptr, &facts);
  const auto count = std::count_if(all.begin(), all.end(),
                                   [](const Diagnosis& d) { return d.id == "rank_stalled"; });
  EXPECT_EQ(count, 1);
  const Diagnosis* d = find(all, "rank_stalled");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_THAT(d->symptom, HasSubstr("rank 1 made no progress"));
  ASSERT_EQ(d->evidence.size(), 3u);
  EXPECT_EQ(d->evidence[0].rank, 1);
  EXPECT_EQ(d->evidence[2].rank, 0);
}

// The collective ledger places the first rank: behind the collective the others called, or
// at one index calling another one (a desync); the card says so, not only the silence.
TEST(MetricRules, AStallTheLedgerPlacesGetsItsOwnDiagnosis) {
  LaunchFacts facts;
  launch::Stall behind = stall(1, 2, 5.0);
  behind.behind = true;
  behind.collective =
      "never reached all_reduce #6 of world (float32[1,4], train.py:42), which rank 0 called; "
      "its last: all_reduce #5 of world (float32[1], train.py:42)";
  behind.stack = "in wait, called at train.py:22 in load_batch";
  facts.stalled = {behind, stall(0, 2, 5.0)};
  auto all = run({}, nullptr, &facts);
  const Diagnosis* d = find(all, "rank_behind_collective");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(find(all, "rank_stalled"), nullptr);
  EXPECT_EQ(d->failed_rank, 1);
  EXPECT_EQ(d->symptom, "rank 1 made no progress for 5 s: it " + behind.collective);
  EXPECT_THAT(d->cause,
              HasSubstr("its main thread is in wait, called at train.py:22 in load_batch"));
  ASSERT_EQ(d->evidence.size(), 2u);

  launch::Stall odd = stall(1, 2, 5.0);
  odd.desync = true;
  odd.collective = "called barrier #6 of world (train.py:40) where rank 0 called all_reduce #6";
  facts.stalled = {odd, stall(0, 2, 5.0)};
  all = run({}, nullptr, &facts);
  d = find(all, "collective_desync");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->symptom, HasSubstr("it called barrier #6 of world"));
  EXPECT_THAT(d->cause,
              HasSubstr("has no stack on record (only a rank under the probe is asked for one)"));
}

logs::CollectiveRecord coll(int rank, std::int64_t seq, std::vector<std::int64_t> shape,
                            std::string site) {
  logs::CollectiveRecord c;
  c.at = at(rank, 10 + seq, 100.0 + static_cast<double>(seq));
  c.group = "world";
  c.seq = seq;
  c.op = "all_reduce";
  c.shape = std::move(shape);
  c.dtype = "float32";
  c.site = std::move(site);
  c.global_step = seq / 2;
  return c;
}

TEST(MetricRules, RanksWhoseLedgersPartAreNamedWithEveryRanksLineWhenTheRunEnded) {
  // Rank 1 called one all_reduce more, of another size: Gloo aborts on the sizes.
  const auto all =
      run({{"probe-rank0.jsonl", {coll(0, 5, {1}, "t.py:42"), coll(0, 6, {1, 4}, "t.py:42")}},
           {"probe-rank1.jsonl", {coll(1, 5, {1}, "t.py:42"), coll(1, 6, {145}, "t.py:39")}}});
  const Diagnosis* d = find(all, "collective_split");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom,
            "the ranks' collectives part at step 3, all_reduce #6 of world: rank 0 called "
            "all_reduce (float32[1,4], t.py:42); rank 1 called all_reduce (float32[145], "
            "t.py:39): the same collective with different shapes at one index");
  EXPECT_THAT(d->cause, HasSubstr("ranks 0 and 1 made different calls there"));
  EXPECT_THAT(d->fix, HasSubstr("at t.py:42 and t.py:39"));
  ASSERT_EQ(d->evidence.size(), 2u);
  EXPECT_EQ(d->evidence[1].file, "probe-rank1.jsonl");
  EXPECT_EQ(d->evidence[1].line, 16);
  // A stall is placed by the watchdog's attribution instead: one headline, the stall list's.
  LaunchFacts facts;
  facts.stalled = {stall(1, 2, 5.0)};
  const auto stalled = run({{"probe-rank0.jsonl", {coll(0, 6, {1, 4}, "t.py:42")}},
                            {"probe-rank1.jsonl", {coll(1, 6, {145}, "t.py:39")}}},
                           nullptr, &facts);
  EXPECT_EQ(find(stalled, "collective_split"), nullptr);
}

TEST(MetricRules, FirstRankToExitBadlyIsNamed) {
  LaunchFacts facts;
  facts.exited = {ended(0, 1, "", 105.0), ended(2, 0, "SIGKILL", 100.0), ended(1, 0, "", 90.0),
                  ended(3, 1, "", 0)};
  auto all = run({}, nullptr, &facts);
  const Diagnosis* d = find(all, "rank_exited_first");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->failed_rank, 2);
  EXPECT_EQ(d->symptom, "rank 2 was killed by signal 9 (SIGKILL) before any other rank failed");
  EXPECT_THAT(d->cause, HasSubstr("OOM killer"));

  facts.exited = {ended(1, 0, "", 0), ended(3, 2, "", 0)};
  auto code = run({}, nullptr, &facts);
  ASSERT_NE(find(code, "rank_exited_first"), nullptr);
  EXPECT_EQ(find(code, "rank_exited_first")->symptom,
            "rank 3 exited with code 2 before any other rank failed");

  facts.exited = {ended(0, 0, "", 0)};
  EXPECT_FALSE(names(run({}, nullptr, &facts), "rank_exited_first"));
  // Ranks the orchestrator stopped, and ranks with no process information, did not fail first.
  facts.exited = {ended(0, 1, "", 90.0), ended(1, 0, "SIGTERM", 80.0), launch::RankEnding{}};
  facts.exited[1].stopped = true;
  const auto stopped = run({}, nullptr, &facts);
  ASSERT_NE(find(stopped, "rank_exited_first"), nullptr);
  EXPECT_EQ(find(stopped, "rank_exited_first")->failed_rank, 0);
}

TEST(MetricRules, ProcessGroupNeverFormed) {
  logs::RunRecord r0;
  r0.at = at(0, 1);
  r0.world_size = 2;
  logs::RunRecord r1 = r0;
  r1.at = at(1, 1);
  logs::PgReadyRecord ready;
  ready.at = at(0, 2);
  auto all = run({{"rank0.log", {r0, ready}}, {"rank1.log", {r1}}});
  const Diagnosis* d = find(all, "process_group_not_formed");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->symptom, "ranks 1 of 2 never reported a formed process group (no pg_ready)");
}

TEST(MetricRules, RuleLeftOutOfTheCatalogDoesNotRun) {
  Catalog trimmed = catalog();
  std::erase_if(trimmed.rules, [](const RuleText& r) { return r.text.id == "loss_non_finite"; });
  const std::vector<logs::RankLog> logs =
      rank_logs({{"r.log", {step(0, 0, std::numeric_limits<double>::infinity())}}});
  MetricInput input;
  input.logs = logs;
  EXPECT_TRUE(apply_metric_rules(trimmed, input).empty());
  EXPECT_EQ(apply_metric_rules(catalog(), input).size(), 1u);
}

// Each rank draws from the whole data set: as many samples a step as the baseline, but rank 0
// reads at step 1 a sample rank 1 read at step 0, where the baseline read each sample once.
TEST(MetricRules, SamplesReadTwiceWhereTheBaselineReadEachOnceAreSamplesRepeated) {
  std::vector<logs::RankLog> logs(2);
  baseline::Baseline base;
  for (std::int64_t s = 0; s < 2; ++s) {
    baseline::BaselineStep b;
    b.global_step = s;
    b.sample_count = 4;
    b.sample_digest = 0;
    b.sample_repeats = 0;
    base.steps.push_back(b);
  }
  for (int r = 0; r < 2; ++r) {
    logs::RankLog& l = logs[static_cast<std::size_t>(r)];
    l.rank = r;
    l.probe_ran = true;
    l.pg_ready.push_back(logs::PgReadyRecord{{r, 2, 0}, 1.0, 2, "gloo"});
    for (std::int64_t s = 0; s < 2; ++s) {
      const std::uint64_t first = 2 * static_cast<std::uint64_t>(s + r) + 100;
      l.step_digests.push_back({s,
                                0x10 + static_cast<std::uint64_t>(4 * s + r),
                                0x30,
                                {r, static_cast<std::int64_t>(5 + s), 0},
                                2,
                                2 * first + 1,
                                {first, first + 1}});
    }
  }
  MetricInput input;
  input.logs = logs;
  input.baseline = &base;
  const std::vector<Diagnosis> all = apply_metric_rules(catalog(), input);
  const Diagnosis* d = find(all, "samples_repeated");
  ASSERT_NE(d, nullptr) << all.size();
  EXPECT_EQ(d->klass, "sample_coverage");
  EXPECT_NE(d->symptom.find("rank 0 at step 1 read a sample rank 1 had read at step 0: 2 of the "
                            "8 samples of the first 2 steps were read again"),
            std::string::npos)
      << d->symptom;
  EXPECT_NE(d->cause.find("the 2 ranks do not split the data"), std::string::npos) << d->cause;
  ASSERT_EQ(d->evidence.size(), 2u);
  EXPECT_EQ(d->evidence[0].rank, 1);
  // The baseline read samples twice too (drawn with replacement): nothing to say.
  base.steps[1].sample_repeats = 1;
  EXPECT_FALSE(names(apply_metric_rules(catalog(), input), "samples_repeated"));
}

}  // namespace
}  // namespace bigmac::diagnose
