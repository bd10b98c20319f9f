#include "gates/process_checks.h"

#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

GateEvidence dp_evidence(int world = 4) {
  GateEvidence e;
  for (int r = 0; r < world; ++r)
    e.add_rank(r, healthy_rank(r, world, 3, r == 0, 2, 1, world), clean_exit());
  return e;
}

TEST(ExitStatus, AllCleanPassesAnyOtherFails) {
  const GatePlan p = plan("dp");
  EXPECT_TRUE(run_check(check_exit_status, dp_evidence(), p).passed);
  EXPECT_FALSE(run_check(check_exit_status, GateEvidence{}, p).passed);

  GateEvidence crashed = dp_evidence();
  crashed.ranks[2].exit = RankEnding{true, 1, {}, false, {}, false};
  crashed.ranks[2].context.add(logs::TextLine{at(2, 40), "RuntimeError: injected crash", false});
  const CheckResult r = run_check(check_exit_status, crashed, p);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("1 of 4 ranks did not exit cleanly; first: rank 2: exit 1"),
            std::string::npos)
      << r.message;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_EQ(r.evidence[1].text, "RuntimeError: injected crash");

  GateEvidence killed = dp_evidence();
  killed.ranks[0].exit = RankEnding{true, {}, "SIGKILL", false, {}, false};
  EXPECT_NE(run_check(check_exit_status, killed, p).message.find("killed by SIGKILL"),
            std::string::npos);

  GateEvidence unknown = dp_evidence();
  unknown.ranks[1].exit = RankEnding{};
  EXPECT_FALSE(run_check(check_exit_status, unknown, p).passed);

  GateEvidence missing = dp_evidence(3);  // a rank never produced a log
  EXPECT_FALSE(run_check(check_exit_status, missing, p).passed);
}

TEST(ExitStatus, RanksStoppedAtANonFiniteLossAreLeftToFiniteLoss) {
  const GatePlan p = plan("dp");
  GateEvidence stopped = dp_evidence();
  for (RankEvidence& r : stopped.ranks) {
    r.exit = RankEnding{true, {}, "SIGTERM", false, "stopped by the orchestrator", true};
  }
  const CheckResult r = run_check(check_exit_status, stopped, p);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("4 stopped by the orchestrator at a non-finite loss"), std::string::npos)
      << r.message;

  // A rank that crashed by itself still fails, even when others were stopped.
  stopped.ranks[1].exit = RankEnding{true, 3, {}, false, {}, false};
  EXPECT_FALSE(run_check(check_exit_status, stopped, p).passed);
}

TEST(ExitStatus, AFailedRanksOwnStderrLinesAndNodeAreTheEvidenceAheadOfStoppedRanks) {
  const GatePlan p = plan("dp");
  GateEvidence e = dp_evidence();
  for (RankEvidence& r : e.ranks) {
    r.exit = RankEnding{
        true, {}, "SIGKILL", false, "stopped by the orchestrator after another rank failed", false};
    r.exit.stopped = true;
    r.exit.node = r.rank < 2 ? "n1" : "n2";
  }
  RankEnding& failed = e.ranks[3].exit;
  failed = RankEnding{true, 2, {}, false, {}, false};
  failed.node = "n2";
  failed.error_lines = {"Traceback (most recent call last):",
                        "bigmac-train: error: RANK and WORLD_SIZE must be set together"};
  e.ranks[3].context.add(logs::TextLine{at(3, 9), "a stdout line, not the evidence", false});
  const CheckResult r = run_check(check_exit_status, e, p);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("first: rank 3: exit 2 on node n2"), std::string::npos) << r.message;
  ASSERT_GE(r.evidence.size(), 3u);
  EXPECT_EQ(r.evidence[0].text, "rank 3: exit 2 on node n2");
  EXPECT_EQ(r.evidence[1].text, "stderr: Traceback (most recent call last):");
  EXPECT_EQ(r.evidence[2].text,
            "stderr: bigmac-train: error: RANK and WORLD_SIZE must be set together");
  EXPECT_NE(r.evidence[3].text.find("rank 0: killed by SIGKILL on node n1 (stopped by the "
                                    "orchestrator after another rank failed)"),
            std::string::npos)
      << r.evidence[3].text;
}

TEST(ExitStatus, RanksOnAFailedNodeSaySo) {
  const GatePlan p = plan("dp");
  GateEvidence e = dp_evidence();
  e.ranks[2].exit = RankEnding{true, {}, "SIGTERM", false, {}, false};
  e.ranks[2].exit.stopped = true;
  e.ranks[2].exit.node = "n2";
  e.ranks[2].exit.node_failed = true;
  const CheckResult r = run_check(check_exit_status, e, p);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("rank 2: killed by SIGTERM on node n2 (Slurm reported the node failed)"),
            std::string::npos)
      << r.message;
}

TEST(ProcessGroupFormed, EveryRankWithThePlannedWorld) {
  const GatePlan p = plan("dp");
  EXPECT_TRUE(run_check(check_process_group_formed, dp_evidence(), p).passed);
  EXPECT_FALSE(run_check(check_process_group_formed, GateEvidence{}, p).passed);
  GateEvidence hung = dp_evidence();
  hung.ranks[3].pg_ready.clear();
  const CheckResult r = run_check(check_process_group_formed, hung, p);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("ranks [3] never logged pg_ready"), std::string::npos) << r.message;
  GateEvidence wrong = dp_evidence();
  wrong.ranks[1].pg_ready[0].world_size = 5;
  EXPECT_NE(
      run_check(check_process_group_formed, wrong, p).message.find("group of 5 ranks, planned 4"),
      std::string::npos);
}

TEST(SingleCheckpointWriter, ExactlyOne) {
  const GatePlan p = plan("target");
  EXPECT_TRUE(run_check(check_single_checkpoint_writer, dp_evidence(), p).passed);
  GateEvidence none = dp_evidence();
  none.ranks[0].checkpoints.clear();
  EXPECT_FALSE(run_check(check_single_checkpoint_writer, none, p).passed);
  GateEvidence all = dp_evidence();
  for (auto& r : all.ranks) r.checkpoints.push_back(logs::CheckpointRecord{at(r.rank, 50), 2, "c"});
  const CheckResult r = run_check(check_single_checkpoint_writer, all, p);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("4 ranks wrote checkpoints: [0,1,2,3]"), std::string::npos) << r.message;
}

TEST(NoIdleStage, GapsBeyondTheLimitFail) {
  const GatePlan p = plan("target");
  const nlohmann::json params = {{"idle_limit_s", 5.0}};
  EXPECT_TRUE(run_check(check_no_idle_stage, dp_evidence(), p, nullptr, params).passed);
  EXPECT_FALSE(run_check(check_no_idle_stage, GateEvidence{}, p, nullptr, params).passed);

  GateEvidence stall = dp_evidence();
  stall.ranks[1].heartbeats[2].at.t += 20;  // 21 s after the previous heartbeat
  const CheckResult r = run_check(check_no_idle_stage, stall, p, nullptr, params);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("rank 1 (stage 0) idle"), std::string::npos) << r.message;

  GateEvidence silent = dp_evidence();
  silent.ranks[2].heartbeats.clear();
  EXPECT_FALSE(run_check(check_no_idle_stage, silent, p, nullptr, params).passed);

  GateEvidence stalled = dp_evidence();
  stalled.ranks[3].exit.stalled = true;
  EXPECT_NE(run_check(check_no_idle_stage, stalled, p, nullptr, params).message.find("stalled"),
            std::string::npos);
}

// Under the probe a rank that trained without init_process_group never formed a group: the
// program is not distributed, said as such, never "unobservable" nor a hang.
TEST(ProcessGroupFormed, RanksThatTrainedAloneUnderTheProbeAreNotDistributed) {
  const GatePlan p = plan("dp");
  GateEvidence alone = dp_evidence();
  for (RankEvidence& r : alone.ranks) {
    r.pg_ready.clear();
    r.probe_ran = true;
    if (r.steps.empty()) {
      logs::StepRecord s;
      s.at = at(r.rank, 20);
      s.loss = 4.0;
      r.steps.push_back(s);
    }
  }
  const CheckResult r = run_check(check_process_group_formed, alone, p);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.unobservable.empty());
  EXPECT_NE(r.message.find("the program is not distributed: all 4 ranks trained"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(r.evidence.size(), 4u);
  // Without the probe nothing saw the call: a trainer that does not log pg_ready.
  for (RankEvidence& rank : alone.ranks) rank.probe_ran = false;
  EXPECT_FALSE(run_check(check_process_group_formed, alone, p).unobservable.empty());
}

// The orchestrator stopped every rank at the step bound: a clean end, not a failure.
TEST(ExitStatus, RanksStoppedAtTheStepBoundEndedCleanly) {
  const GatePlan p = plan("dp");
  GateEvidence bounded = dp_evidence();
  for (RankEvidence& r : bounded.ranks) {
    r.exit = RankEnding{true, {}, "SIGTERM", false, "stopped at the step bound", false};
    r.exit.stopped = true;
    r.exit.bounded = true;
  }
  EXPECT_TRUE(run_check(check_exit_status, bounded, p).passed);
}

}  // namespace
}  // namespace bigmac::gates
