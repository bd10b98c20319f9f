// Every injected fault of bigmac-train, observed from outside as the orchestrator would: exit
// codes, signals, log contents, and a hang the test confirms and then kills.

#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

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
  // Steps 0..2 complete on both ranks, then rank 1 blocks and rank 0 waits for it: it has
  // begun step 3 and logged every gradient bucket's all-reduce of it (as many as of step 2)
  // before the first of them can complete.
  auto reduces_of = [&](int step) {
    std::size_t n = 0;
    for (const auto& c : TrainLog::read(job.log(0)).of("coll")) n += c.at("global_step") == step;
    return n;
  };
  ASSERT_TRUE(wait_until(
      [&] {
        return job.count(0, "heartbeat") >= 3 && job.count(1, "heartbeat") >= 3 &&
               job.began(0, 3) && reduces_of(3) == reduces_of(2);
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

/// The entries of `log` on `group`, by their index there.
std::map<int, nlohmann::json> ledger_on(const TrainLog& log, const std::string& group) {
  std::map<int, nlohmann::json> out;
  for (const auto& c : log.of("coll")) {
    if (c.at("group") == group) out[c.at("seq").get<int>()] = c;
  }
  return out;
}

/// The first index of `group` where the two ranks' ledgers part (op or shape), with both calls.
std::optional<std::pair<nlohmann::json, nlohmann::json>> first_split(const RankJob& job,
                                                                     const std::string& group) {
  auto a = ledger_on(TrainLog::read(job.log(0)), group);
  auto b = ledger_on(TrainLog::read(job.log(1)), group);
  for (const auto& [seq, call] : a) {
    auto other = b.find(seq);
    if (other == b.end()) break;
    if (call.at("op") != other->second.at("op") ||
        call.value("shape", nlohmann::json()) != other->second.value("shape", nlohmann::json()))
      return std::make_pair(call, other->second);
  }
  return std::nullopt;
}

TEST(Faults, ExtraCollectiveDesyncsTheRanksAndTheLedgerSaysWhere) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "6", "--set", "faults.extra_collective=1:2", "--set",
                "launch.init_timeout_s=120"});
  // Each rank logs a call before it goes in: whether Gloo aborts on the mismatch or the ranks
  // block in it, both calls at the index where they part are in the ledgers.
  std::optional<std::pair<nlohmann::json, nlohmann::json>> split;
  ASSERT_TRUE(wait_until([&] { return (split = first_split(job, "world")).has_value(); }, 90000ms))
      << job.stderr_of(0) << job.stderr_of(1);
  const auto& [mine, odd] = *split;
  EXPECT_EQ(mine.at("op"), "all_reduce");
  EXPECT_EQ(mine.at("global_step"), 2);
  EXPECT_EQ(mine.at("site").get<std::string>().rfind("trainer.cpp:", 0), 0u) << mine.dump();
  EXPECT_EQ(mine.at("fn"), "train_step");
  EXPECT_EQ(odd.at("op"), "barrier");
  EXPECT_EQ(odd.at("global_step"), 2);
  EXPECT_EQ(odd.at("site").get<std::string>().rfind("fault_injector.cpp:", 0), 0u) << odd.dump();
  EXPECT_EQ(odd.at("fn"), "before_world_reduce");
  EXPECT_EQ(mine.at("seq"), odd.at("seq"));
  job.harness.kill_all();
  EXPECT_TRUE(job.harness.wait_all(10000ms));
}

TEST(Faults, CollectiveShapeMakesOneRankReduceALongerTensor) {
  TempDir dir;
  RankJob job(dir.path());
  job.start(2, {"--max-steps", "6", "--set", "faults.collective_shape=0:3", "--set",
                "launch.init_timeout_s=120"});
  std::optional<std::pair<nlohmann::json, nlohmann::json>> split;
  ASSERT_TRUE(wait_until([&] { return (split = first_split(job, "world")).has_value(); }, 90000ms))
      << job.stderr_of(0) << job.stderr_of(1);
  const auto& [longer, healthy] = *split;
  EXPECT_EQ(longer.at("op"), "all_reduce");
  EXPECT_EQ(healthy.at("op"), "all_reduce");
  EXPECT_EQ(longer.at("global_step"), 3);
  ASSERT_EQ(longer.at("shape").size(), 1u);
  EXPECT_EQ(longer.at("shape")[0].get<long>(), healthy.at("shape")[0].get<long>() + 1)
      << longer.dump() << " vs " << healthy.dump();
  EXPECT_EQ(longer.at("dtype"), "float32");
  job.harness.kill_all();
  EXPECT_TRUE(job.harness.wait_all(10000ms));
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
