// The pipeline faults of bigmac-train, each observed from outside: exit codes and error text,
// log contents, and a stalled stage the test confirms and then kills.

#include <gtest/gtest.h>

#include <cmath>

#include "train_run.h"

namespace bigmac::testing {
namespace {

/// Two pipeline stages with one fault; waits for both ranks.
void run_two_stages(RankJob& job, const std::string& fault, int steps = 2) {
  job.start(2, {"--max-steps", std::to_string(steps), "--set", "parallel.pp_size=2", "--set", fault,
                "--set", "launch.init_timeout_s=30"});
  ASSERT_TRUE(job.harness.wait_all(90000ms)) << "a broken pipeline must fail, not hang";
}

TEST(PipelineFaults, BoundarySeqTrimFailsAtTheBoundaryWithBothShapes) {
  TempDir dir;
  RankJob job(dir.path());
  run_two_stages(job, "faults.boundary_seq_trim=1");
  EXPECT_EQ(job.harness.end(1)->code, 1);
  EXPECT_NE(job.harness.end(0)->code, 0) << "the sender loses its peer";
  std::string err = job.stderr_of(1);
  EXPECT_NE(err.find("stage 0 sends hidden_states [2,31,64] float32"), std::string::npos) << err;
  EXPECT_NE(err.find("stage 1 expects [2,32,64] float32"), std::string::npos) << err;
  EXPECT_TRUE(TrainLog::read(job.log(1)).of("step").empty());
}

TEST(PipelineFaults, BoundaryDtypeFailsAtTheBoundaryWithBothDtypes) {
  TempDir dir;
  RankJob job(dir.path());
  run_two_stages(job, "faults.boundary_dtype=bf16");
  EXPECT_EQ(job.harness.end(1)->code, 1);
  std::string err = job.stderr_of(1);
  EXPECT_NE(err.find("[2,32,64] bfloat16"), std::string::npos) << err;
}

TEST(PipelineFaults, RaggedMicrobatchBreaksTheShapes) {
  TempDir dir;
  RankJob job(dir.path());
  run_two_stages(job, "faults.ragged_microbatch=true");
  EXPECT_NE(job.harness.end(1)->code, 0);
  EXPECT_NE(job.harness.end(0)->code, 0);
  EXPECT_NE(job.stderr_of(1).find("error"), std::string::npos) << job.stderr_of(1);
  EXPECT_TRUE(TrainLog::read(job.log(1)).of("step").empty());
}

TEST(PipelineFaults, MiddleStageLossLogsALossOnAStageWithoutLabels) {
  TempDir dir;
  RankJob job(dir.path());
  run_two_stages(job, "faults.middle_stage_loss=true");
  ASSERT_EQ(job.harness.end(0)->code, 0) << job.stderr_of(0);
  auto losses = TrainLog::read(job.log(0)).of("loss");
  ASSERT_FALSE(losses.empty());
  EXPECT_EQ(losses[0].at("stage"), 0);
}

TEST(PipelineFaults, UntiedSyncLetsTheTiedCopiesDrift) {
  TempDir dir;
  auto args = base_args(dir / "single.jsonl");
  args.insert(args.end(), {"--max-steps", "3"});
  ASSERT_EQ(run_single(dir.path(), args).code, 0);
  auto base = TrainLog::read(dir / "single.jsonl").values("step", "loss");
  RankJob job(dir.path());
  run_two_stages(job, "faults.untied_sync=true", 3);
  ASSERT_EQ(job.harness.end(1)->code, 0) << job.stderr_of(1);
  auto losses = TrainLog::read(job.log(1)).values("step", "loss");
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_NEAR(losses[0], base[0], 1e-4 * base[0]) << "same start";
  EXPECT_GT(std::abs(losses[2] - base[2]), 1e-4 * base[2]) << "then the copies drift apart";
}

TEST(PipelineFaults, StageStallStarvesTheOtherStagesUntilKilled) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "50", "--set", "parallel.pp_size=2", "--set",
                "faults.stage_stall=1:2", "--set", "launch.init_timeout_s=120"});
  // Steps 0 and 1 complete (8 mb events each); in step 2 stage 0 runs its 1F1B warm-up forward
  // and the next forward (2 mb events), then waits for a gradient stage 1 never sends: its
  // last line is the ledger's entry of that receive.
  ASSERT_TRUE(wait_until(
      [&] {
        return job.count(0, "mb") >= 18 && job.count(1, "heartbeat") >= 2 &&
               job.last_line(0).find("\"op\":\"recv\"") != std::string::npos;
      },
      90000ms))
      << job.stderr_of(0) << job.stderr_of(1);
  auto size0 = std::filesystem::file_size(job.log(0));
  auto size1 = std::filesystem::file_size(job.log(1));
  bool progressed = wait_until(
      [&] {
        return job.harness.exited(0) || job.harness.exited(1) ||
               std::filesystem::file_size(job.log(0)) != size0 ||
               std::filesystem::file_size(job.log(1)) != size1;
      },
      2000ms);
  EXPECT_FALSE(progressed) << "a stalled pipeline made progress or exited";
  EXPECT_EQ(job.count(0, "heartbeat"), 2u);
  EXPECT_EQ(job.count(0, "mb"), 18u);
  EXPECT_EQ(job.count(1, "mb"), 16u) << "the stalled stage ran nothing of step 2";
  job.harness.kill_all();
}

TEST(PipelineFaults, SplitOutOfRangeLeavesAStageWithoutLayersThatNeverRunsAForward) {
  TempDir dir;
  RankJob job(dir.path());
  run_two_stages(job, "faults.split_out_of_range=true");
  TrainLog empty = TrainLog::read(job.log(1));
  auto layout = empty.of("layout").at(0);
  EXPECT_EQ(layout.at("first_layer"), -1);
  EXPECT_EQ(layout.at("last_layer"), -1);
  EXPECT_EQ(TrainLog::read(job.log(0)).of("layout").at(0).at("last_layer"), 3);
  EXPECT_TRUE(empty.of("mb").empty()) << "the stage without layers never logs a forward";
  EXPECT_TRUE(empty.of("step").empty());
  // With nothing run, its half of the tied embedding has no gradient: the run fails.
  EXPECT_NE(job.harness.end(1)->code, 0);
  EXPECT_NE(job.harness.end(0)->code, 0);
}

}  // namespace
}  // namespace bigmac::testing
