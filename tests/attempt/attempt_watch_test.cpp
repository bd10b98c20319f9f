// The live view of an attempt's records (AttemptWatch::rank_log) as the early stop judges it
// while ranks are still logging: under the probe alone and pure data parallelism, a step's loss
// is the run's (the mean over every replica) or absent, whichever replica logs first.
#include <gtest/gtest.h>

#include <cmath>

#include "attempt/attempt_watch.h"
#include "logs/record.h"

namespace {

using bigmac::attempt::AttemptWatch;
using bigmac::logs::StepRecord;

StepRecord probe_step(int rank, std::int64_t step, double loss) {
  StepRecord s;
  s.at.rank = rank;
  s.global_step = step;
  s.loss = loss;
  s.grad_norm = 0.5;
  return s;
}

AttemptWatch two_replicas() {
  AttemptWatch watch;
  watch.model_parallel = 1;
  watch.data_parallel = 2;
  return watch;
}

TEST(AttemptWatchLive, AReplicaThatLogsBeforeRankZeroCarriesNoLossOfTheRun) {
  AttemptWatch watch = two_replicas();
  // Rank 0 joined the process group but has not finished step 0 yet.
  bigmac::logs::PgReadyRecord ready;
  ready.at.rank = 0;
  watch.from_probe[0].add(ready);
  watch.from_probe[1].add(probe_step(1, 0, 1.5));
  const auto replica = watch.rank_log(1);
  ASSERT_EQ(replica.steps.size(), 1u);
  EXPECT_FALSE(replica.steps[0].loss.has_value()) << "one replica's loss judged as the run's";
  EXPECT_TRUE(replica.steps[0].grad_norm.has_value()) << "only the loss is the replica's own";
}

TEST(AttemptWatchLive, RankZeroHasNoLossUntilEveryReplicaLoggedTheStepThenTheMean) {
  AttemptWatch watch = two_replicas();
  watch.from_probe[0].add(probe_step(0, 0, 1.0));
  ASSERT_EQ(watch.rank_log(0).steps.size(), 1u);
  EXPECT_FALSE(watch.rank_log(0).steps[0].loss.has_value());
  watch.from_probe[1].add(probe_step(1, 0, 2.0));
  const auto owner = watch.rank_log(0);
  ASSERT_TRUE(owner.steps[0].loss.has_value());
  EXPECT_DOUBLE_EQ(*owner.steps[0].loss, 1.5);
  EXPECT_FALSE(watch.rank_log(1).steps[0].loss.has_value());
}

TEST(AttemptWatchLive, OneProcessKeepsItsOwnLoss) {
  AttemptWatch watch;
  watch.from_probe[0].add(probe_step(0, 0, 1.25));
  const auto single = watch.rank_log(0);
  ASSERT_TRUE(single.steps.at(0).loss.has_value());
  EXPECT_DOUBLE_EQ(*single.steps[0].loss, 1.25);
}

}  // namespace

namespace {

TEST(AttemptWatchLive, ProbeStepsWaitForATrainerThatLogsRecordsOfItsOwn) {
  // The trainer wrote its `run` event to its log file; its step 0 line is not read yet, the
  // probe's step 0 is (with the applied, clipped grad_norm where the trainer logs the pre-clip).
  AttemptWatch watch;
  bigmac::logs::RunRecord run;
  run.at.rank = 0;
  run.world_size = 1;
  watch.from_file[0].add(run);
  StepRecord probe = probe_step(0, 0, 4.1);
  probe.grad_norm = 1.0;
  watch.from_probe[0].add(probe);
  EXPECT_TRUE(watch.rank_log(0, AttemptWatch::Moment::kLive).steps.empty());
  // Once the ranks have ended, a trainer that never logged a step is measured by the probe.
  const auto ended = watch.rank_log(0);
  ASSERT_EQ(ended.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(*ended.steps[0].grad_norm, 1.0);
  // And with no record of its own, the probe alone is judged live.
  AttemptWatch silent;
  silent.from_probe[0].add(probe);
  EXPECT_EQ(silent.rank_log(0, AttemptWatch::Moment::kLive).steps.size(), 1u);
}

}  // namespace

namespace {

StepRecord stage_step(int rank, std::int64_t step, std::optional<double> loss, double grad_sq) {
  StepRecord s;
  s.at.rank = rank;
  s.global_step = step;
  s.loss = loss;
  s.grad_norm = std::sqrt(grad_sq);
  s.extra = {{"grad_norm_sq", grad_sq}};
  return s;
}

bigmac::logs::ModelRecord params(int rank, std::int64_t count) {
  bigmac::logs::ModelRecord m;
  m.at.rank = rank;
  m.param_count = count;
  return m;
}

/// Two stages, one replica: stage 0 (rank 0) has no loss, stage 1 (rank 1) computes it.
AttemptWatch two_stages(std::int64_t stage0_params) {
  AttemptWatch watch;
  watch.model_parallel = 2;
  watch.data_parallel = 1;
  watch.model_param_count = 100;
  watch.from_probe[0].add(params(0, stage0_params));
  watch.from_probe[1].add(params(1, 40));
  watch.from_probe[0].add(stage_step(0, 0, std::nullopt, 9.0));
  return watch;
}

TEST(AttemptWatchStages, APipelinesLossIsTheLastStagesAndItsGradNormAddsTheStagesSquares) {
  AttemptWatch watch = two_stages(60);
  // Live, before the last stage logged step 0: no value of the run yet.
  auto owner = watch.rank_log(0, AttemptWatch::Moment::kLive);
  ASSERT_EQ(owner.steps.size(), 1u);
  EXPECT_FALSE(owner.steps[0].loss.has_value());
  EXPECT_FALSE(owner.steps[0].grad_norm.has_value()) << "stage 0's own norm is not the run's";
  watch.from_probe[1].add(stage_step(1, 0, 2.5, 16.0));
  owner = watch.rank_log(0);
  ASSERT_TRUE(owner.steps[0].loss.has_value());
  EXPECT_DOUBLE_EQ(*owner.steps[0].loss, 2.5);
  ASSERT_TRUE(owner.steps[0].grad_norm.has_value());
  EXPECT_DOUBLE_EQ(*owner.steps[0].grad_norm, 5.0);
  EXPECT_NE(owner.field_sources.at("grad_norm").find("summed over the stages"),
            std::string::npos);
  // The last stage's own values are not the run's.
  const auto last = watch.rank_log(1);
  EXPECT_FALSE(last.steps.at(0).loss.has_value());
  EXPECT_FALSE(last.steps.at(0).grad_norm.has_value());
}

TEST(AttemptWatchStages, AWeightOnTwoStagesLeavesTheGradNormAbsentAndSaysWhy) {
  AttemptWatch watch = two_stages(70);  // 110 held, 100 in the model: a tied weight
  watch.from_probe[1].add(stage_step(1, 0, 2.5, 16.0));
  const auto owner = watch.rank_log(0);
  EXPECT_DOUBLE_EQ(*owner.steps.at(0).loss, 2.5);
  EXPECT_FALSE(owner.steps[0].grad_norm.has_value());
  EXPECT_NE(owner.field_sources.at("grad_norm").find("the stages hold 110 parameters, the model "
                                                     "100"),
            std::string::npos)
      << owner.field_sources.at("grad_norm");

  AttemptWatch tensor = two_stages(60);
  tensor.tensor_parallel = 2;
  EXPECT_FALSE(tensor.stage_combination().grad_norm);
  AttemptWatch no_baseline = two_stages(60);
  no_baseline.model_param_count = 0;
  EXPECT_FALSE(no_baseline.stage_combination().grad_norm);
}

}  // namespace
