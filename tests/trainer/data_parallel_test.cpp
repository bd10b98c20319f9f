// bigmac-train data parallel on CPU (gate 2): N ranks with the torchrun environment, started by
// the test harness, must reproduce the single-process run with the same samples per step.

#include <gtest/gtest.h>

#include <cmath>

#include "train_run.h"

namespace bigmac::testing {
namespace {

constexpr int kSteps = 6;

/// Single process, micro 2 × accum 4 = 8 samples per step.
TrainLog single_baseline(const TempDir& dir) {
  auto args = base_args(dir / "single.jsonl");
  args.insert(args.end(), {"--max-steps", std::to_string(kSteps)});
  RankEnd end = run_single(dir.path(), args);
  EXPECT_EQ(end.code, 0) << RankJob::read_text(dir / "single.err");
  return TrainLog::read(dir / "single.jsonl");
}

void expect_matches_baseline(const TrainLog& single, RankJob& job) {
  ASSERT_TRUE(job.harness.wait_all(100000ms)) << "data-parallel ranks did not finish";
  for (int rank = 0; rank < job.world_size; ++rank) {
    ASSERT_EQ(job.harness.end(rank)->code, 0) << "rank " << rank << ": " << job.stderr_of(rank);
  }
  std::vector<TrainLog> logs;
  for (int rank = 0; rank < job.world_size; ++rank) logs.push_back(TrainLog::read(job.log(rank)));

  const auto& lead = logs[0];
  EXPECT_EQ(lead.of("batch").at(0).at("samples_per_step"),
            single.of("batch").at(0).at("samples_per_step"));
  EXPECT_EQ(lead.of("batch").at(0).at("dp"), job.world_size);
  auto base_losses = single.values("step", "loss");
  auto losses = lead.values("step", "loss");
  ASSERT_EQ(losses.size(), base_losses.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], base_losses[i], 1e-4 * std::abs(base_losses[i])) << "step " << i;
  }
  auto base_norms = single.values("step", "grad_norm");
  auto norms = lead.values("step", "grad_norm");
  for (std::size_t i = 0; i < norms.size(); ++i) {
    EXPECT_NEAR(norms[i], base_norms[i], 1e-3 * std::abs(base_norms[i])) << "step " << i;
  }

  const auto initial = single.of("model").at(0).at("param_digest");
  const auto final_digest = lead.of("digest").at(0).at("param_digest");
  for (int rank = 0; rank < job.world_size; ++rank) {
    const auto& log = logs[static_cast<std::size_t>(rank)];
    EXPECT_EQ(log.of("run").at(0).at("backend"), "gloo");
    EXPECT_EQ(log.of("run").at(0).at("world_size"), job.world_size);
    EXPECT_EQ(log.of("pg_ready").size(), 1u) << "rank " << rank;
    EXPECT_EQ(log.of("model").at(0).at("param_digest"), initial) << "rank " << rank;
    EXPECT_EQ(log.of("digest").at(0).at("param_digest"), final_digest)
        << "replicas diverged on rank " << rank;
    EXPECT_EQ(log.of("layout").at(0).at("dp_rank"), rank);
    EXPECT_EQ(log.finished_heartbeats().size(), static_cast<std::size_t>(kSteps));
    EXPECT_EQ(log.of("done").size(), 1u);
    // Only the rank that owns the loss logs steps; only rank 0 checkpoints.
    EXPECT_EQ(log.of("step").size(), rank == 0 ? static_cast<std::size_t>(kSteps) : 0u);
    EXPECT_EQ(log.of("ckpt").size(), rank == 0 ? 1u : 0u);
  }
}

TEST(DataParallel, TwoRanksReproduceTheSingleProcessRun) {
  TempDir dir;
  TrainLog single = single_baseline(dir);
  RankJob job(dir.path());
  job.start(
      2, {"--max-steps", std::to_string(kSteps), "--set", "train.gradient_accumulation_steps=2"});
  expect_matches_baseline(single, job);
}

TEST(DataParallel, FourRanksReproduceTheSingleProcessRun) {
  TempDir dir;
  TrainLog single = single_baseline(dir);
  RankJob job(dir.path());
  job.start(
      4, {"--max-steps", std::to_string(kSteps), "--set", "train.gradient_accumulation_steps=1"});
  expect_matches_baseline(single, job);
}

}  // namespace
}  // namespace bigmac::testing
