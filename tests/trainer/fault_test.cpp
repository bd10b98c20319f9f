// Every injected fault of bigmac-train, observed from outside as the orchestrator would: exit
// codes, signals, log contents, and a hang the test confirms and then kills.

#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>

#include "train_run.h"

namespace bigmac::testing {
namespace {

TrainLog run_single_with(const TempDir& dir, std::vector<std::string> extra,
                         int expected_code = 0) {
  auto args = base_args(dir / "train.jsonl");
  args.insert(args.end(), extra.begin(), extra.end());
  RankEnd end = run_single(dir.path(), args);
  EXPECT_EQ(end.code, expected_code) << RankJob::read_text(dir / "single.err");
  return TrainLog::read(dir / "train.jsonl");
}

std::vector<int> logged_steps(const TrainLog& log) {
  std::vector<int> steps;
  for (const auto& step : log.of("step")) steps.push_back(step.at("global_step"));
  return steps;
}

TEST(Faults, NanAtStepMakesTheLossNanFromThatStepOn) {
  TempDir dir;
  TrainLog log = run_single_with(dir, {"--max-steps", "4", "--set", "faults.nan_at_step=2"});
  auto losses = log.values("step", "loss");
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_TRUE(std::isfinite(losses[0]));
  EXPECT_TRUE(std::isfinite(losses[1]));
  EXPECT_TRUE(std::isnan(losses[2]));
  EXPECT_TRUE(std::isnan(losses[3])) << "the NaN reached the weights and stays";
  EXPECT_TRUE(std::isnan(log.values("step", "grad_norm")[2]));
}

TEST(Faults, GradBlowupMakesTheGradNormGrowStepOverStep) {
  TempDir dir;
  TrainLog log = run_single_with(dir, {"--max-steps", "5", "--set", "faults.grad_blowup=10"});
  auto norms = log.values("step", "grad_norm");
  ASSERT_EQ(norms.size(), 5u);
  for (std::size_t i = 1; i < norms.size(); ++i) {
    EXPECT_GT(norms[i], 3 * norms[i - 1]) << "step " << i;
  }
}

TEST(Faults, SkipStepLogLeavesAGapInTheSteps) {
  TempDir dir;
  TrainLog log = run_single_with(dir, {"--max-steps", "4", "--set", "faults.skip_step_log=2"});
  EXPECT_EQ(logged_steps(log), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(log.finished_heartbeats().size(), 4u) << "the step itself still ran";
}

TEST(Faults, DupStepLogWritesAStepTwice) {
  TempDir dir;
  TrainLog log = run_single_with(dir, {"--max-steps", "4", "--set", "faults.dup_step_log=1"});
  EXPECT_EQ(logged_steps(log), (std::vector<int>{0, 1, 1, 2, 3}));
}

TEST(Faults, BadFaultSpecificationExitsTwo) {
  TempDir dir;
  run_single_with(dir, {"--set", "faults.crash_rank=one"}, 2);
  EXPECT_NE(RankJob::read_text(dir / "single.err").find("faults.crash_rank"), std::string::npos);
}

TEST(Faults, LrScaleByWorldMultipliesTheLrByTheWorldSize) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "2", "--set", "faults.lr_scale_by_world=true"});
  ASSERT_TRUE(job.harness.wait_all(90000ms));
  ASSERT_EQ(job.harness.end(0)->code, 0) << job.stderr_of(0);
  auto lrs = TrainLog::read(job.log(0)).values("step", "lr");
  ASSERT_EQ(lrs.size(), 2u);
  EXPECT_NEAR(lrs[0], 2 * 3e-3 / 5, 1e-12);  // warmup step 0 of 5, times world size 2
  EXPECT_NEAR(lrs[1], 2 * 2 * 3e-3 / 5, 1e-12);
}

TEST(Faults, CrashRankAbortsThatRankAndBreaksTheOthers) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "6", "--set", "faults.crash_rank=1:2"});
  ASSERT_TRUE(job.harness.wait_all(90000ms)) << "the surviving rank must fail, not hang";
  auto crashed = *job.harness.end(1);
  EXPECT_TRUE(crashed.signaled);
  EXPECT_EQ(crashed.signal, SIGABRT);
  EXPECT_NE(job.harness.end(0)->code, 0);
  EXPECT_NE(job.stderr_of(0).find("error"), std::string::npos) << job.stderr_of(0);
  for (int rank = 0; rank < 2; ++rank) {
    TrainLog log = TrainLog::read(job.log(rank));
    EXPECT_LE(log.finished_heartbeats().size(), 3u) << "rank " << rank;
    EXPECT_TRUE(log.of("done").empty()) << "rank " << rank;
  }
  EXPECT_EQ(TrainLog::read(job.log(1)).finished_heartbeats().size(), 2u);
}

TEST(Faults, HangRankStopsAllProgressUntilKilled) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "50", "--set", "faults.hang_rank=1:3", "--set",
                "launch.init_timeout_s=120"});
  // Steps 0..2 complete on both ranks, then rank 1 blocks and rank 0 waits for it.
  ASSERT_TRUE(wait_until(
      [&] {
        return job.count(0, "heartbeat") >= 3 && job.count(1, "heartbeat") >= 3 && job.began(0, 3);
      },
      90000ms))
      << job.stderr_of(0) << job.stderr_of(1);
  // No progress: over an observation window far longer than a step, both ranks stay alive,
  // write nothing, and the hung rank sleeps in the kernel.
  auto size0 = std::filesystem::file_size(job.log(0));
  auto size1 = std::filesystem::file_size(job.log(1));
  bool progressed = wait_until(
      [&] {
        return job.harness.exited(0) || job.harness.exited(1) ||
               std::filesystem::file_size(job.log(0)) != size0 ||
               std::filesystem::file_size(job.log(1)) != size1;
      },
      2000ms);
  EXPECT_FALSE(progressed) << "a hung job made progress or exited";
  EXPECT_EQ(process_state(job.harness.pid(1)), 'S');
  EXPECT_EQ(job.count(0, "heartbeat"), 3u);
  EXPECT_EQ(job.count(0, "step"), 3u);
  job.harness.kill_all();
  EXPECT_TRUE(job.harness.end(0)->signaled);
  EXPECT_TRUE(job.harness.end(1)->signaled);
}

TEST(Faults, HangBeforeRendezvousTimesOutThePeers) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "3", "--set", "faults.hang_rank=1:-1", "--set",
                "launch.init_timeout_s=2"});
  ASSERT_TRUE(job.harness.wait_one(0, 90000ms)) << "rank 0 must give up after the init timeout";
  EXPECT_EQ(job.harness.end(0)->code, 1) << job.stderr_of(0);
  EXPECT_FALSE(job.harness.exited(1)) << "rank 1 hangs until killed";
  TrainLog log1 = TrainLog::read(job.log(1));
  EXPECT_EQ(log1.of("run").size(), 1u);
  EXPECT_TRUE(log1.of("pg_ready").empty());
  EXPECT_TRUE(TrainLog::read(job.log(0)).of("pg_ready").empty());
  job.harness.kill_all();
}

TEST(Faults, WorldSizeOffsetBreaksTheRendezvous) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "3", "--set", "faults.world_size_offset=1", "--set",
                "launch.init_timeout_s=2"});
  ASSERT_TRUE(job.harness.wait_all(90000ms));
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(job.harness.end(rank)->code, 1) << job.stderr_of(rank);
    EXPECT_NE(job.stderr_of(rank).find("rendezvous of 3 ranks"), std::string::npos)
        << job.stderr_of(rank);
    TrainLog log = TrainLog::read(job.log(rank));
    EXPECT_EQ(log.of("run").at(0).at("world_size"), 3);
    EXPECT_TRUE(log.of("pg_ready").empty());
  }
}

TEST(Faults, MasterPortOffsetSplitsTheRendezvous) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "3", "--set", "faults.master_port_offset=1:1", "--set",
                "launch.init_timeout_s=2"});
  ASSERT_TRUE(job.harness.wait_all(90000ms));
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(job.harness.end(rank)->code, 1) << job.stderr_of(rank);
    EXPECT_TRUE(TrainLog::read(job.log(rank)).of("pg_ready").empty());
  }
}

TEST(Faults, AllRanksCheckpointMakesEveryRankWriteOne) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "2", "--set", "faults.all_ranks_checkpoint=true"});
  ASSERT_TRUE(job.harness.wait_all(90000ms));
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(job.harness.end(rank)->code, 0) << job.stderr_of(rank);
    EXPECT_EQ(TrainLog::read(job.log(rank)).of("ckpt").size(), 1u) << "rank " << rank;
  }
}

}  // namespace
}  // namespace bigmac::testing
