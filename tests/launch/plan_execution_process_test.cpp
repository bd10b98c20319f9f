// execute_plan with real rank processes (tests/proc's bigmac-test-rank) and the real clock:
// every outcome observed end to end, and the process table checked afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "launch/launch_planner.h"
#include "launch/plan_execution.h"
#include "launch/process_record.h"
#include "proc/pipe.h"
#include "proc/posix_process_runner.h"
#include "proc/process_table.h"
#include "testing/rank_harness.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kRankProgram = std::string(BIGMAC_BIN_DIR) + "/bigmac-test-rank";

class PlanExecutionProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-exec-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // Generous limits: a loaded 2-core machine must never turn a healthy rank into a stall.
    options_.limits = {seconds(60), seconds(60), true};
    options_.poll_interval = milliseconds(100);
    options_.term_grace = milliseconds(3000);
    options_.process_record = dir_ / kProcessRecordName;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A builtin plan of `n` ranks running `args`; `per_rank` may then change one rank's argv.
  LaunchPlan plan(int n, std::vector<std::string> args, const std::string& launcher = "builtin") {
    config::Config c;
    c.launch.nproc_per_node = n;
    c.launch.launcher = launcher;
    c.launch.master_port =
        testing::free_port();  // torchrun binds it; parallel tests must not collide
    PlanInputs in;
    in.trainer_argv = {kRankProgram};
    in.trainer_argv.insert(in.trainer_argv.end(), args.begin(), args.end());
    in.log_dir = dir_;
    in.torchrun_program = "/usr/bin/torchrun";
    auto p = plan_launch(c, in);
    EXPECT_TRUE(p) << p.error().format();
    return *p;
  }

  static void set_args(LaunchPlan& p, int rank, std::vector<std::string> args) {
    p.processes[rank].spec.argv = {kRankProgram};
    for (std::string& a : args) p.processes[rank].spec.argv.push_back(std::move(a));
  }

  RunResult run(const LaunchPlan& p) {
    proc::PosixProcessRunner runner;
    SteadyClock clock;
    RunResult result = execute_plan(p, runner, clock, options_,
                                    [this](const logs::Record& r, RecordSource source) {
                                      ++records_;
                                      if (source == RecordSource::kLogFile) ++file_records_;
                                      if (on_record_) on_record_(r);
                                    });
    pgid_ = runner.process_group();
    return result;
  }

  /// Nothing of the run is left: no process in its group, no child (or zombie) of ours.
  void expect_nothing_left() {
    ASSERT_NE(pgid_, 0);
    for (const proc::ProcessInfo& p : proc::processes_in_group(pgid_)) {
      ADD_FAILURE() << "left in group: pid " << p.pid << " " << p.state << " " << p.command_line;
    }
    for (const proc::ProcessInfo& p : proc::children_of(::getpid())) {
      ADD_FAILURE() << "left as child: pid " << p.pid << " " << p.state << " " << p.command_line;
    }
  }

  fs::path dir_;
  RunOptions options_;
  int records_ = 0;
  int file_records_ = 0;
  std::function<void(const logs::Record&)> on_record_;
  pid_t pgid_ = 0;
};

TEST_F(PlanExecutionProcessTest, HealthyRanksSucceedAndEveryRecordIsStreamed) {
  RunResult result = run(plan(2, {"train", "3"}));
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  for (const RankOutcome& r : result.ranks) {
    EXPECT_TRUE(r.exit && r.exit->success());
    EXPECT_TRUE(r.rendezvous_done);
    EXPECT_EQ(r.last_step, 2);
    EXPECT_TRUE(r.first_output.has_value());
  }
  EXPECT_EQ(records_, 2 * (1 + 1 + 3 * 2 + 1));  // run, pg_ready, step+heartbeat x3, done
  std::ifstream out(dir_ / "rank1.stdout");
  std::string first;
  std::getline(out, first);
  EXPECT_NE(first.find("\"rank\":1"), std::string::npos) << first;
  auto record = read_process_record(dir_ / kProcessRecordName);
  ASSERT_TRUE(record && *record);
  EXPECT_EQ((*record)->pgid, pgid_);
  EXPECT_EQ((*record)->pids.size(), 2u);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, EventsWrittenToTheRankLogFileAreFollowed) {
  // Like bigmac-train --log-file: events go to the file, stdout stays silent.
  options_.limits.stall_timeout = milliseconds(1000);
  LaunchPlan p = plan(2, {"train", "3", "log-file", "{log_file}"});
  set_args(p, 1, {"train", "5", "hang-at", "2", "log-file", p.ranks[1].log_path.string()});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kStalled) << result.summary();
  ASSERT_EQ(result.stalls.size(), 1u) << result.summary();
  EXPECT_EQ(result.stalls[0].rank, 1);
  EXPECT_EQ(result.stalls[0].last_step, 1);
  EXPECT_EQ(result.ranks[0].last_step, 2);
  EXPECT_EQ(file_records_, records_);
  EXPECT_EQ(file_records_, (1 + 1 + 3 * 2 + 1) + (1 + 1 + 2 * 2));
  expect_nothing_left();
}

// Issue 30 item 2: a rank that wrote its log faster than a poll read it (4 MiB a poll) was
// judged on what had been read: its steps and `done` were lost, or, while it still wrote, its
// lines' own (past) times made it look silent. Every byte is read before the result, and a
// rank with unread bytes is never silent.
TEST_F(PlanExecutionProcessTest, AFloodedLogIsReadToItsEndAndItsRankIsNeverSilent) {
  // A stall limit far below the time 256 MiB takes to read on a loaded machine.
  options_.limits.stall_timeout = milliseconds(1000);
  std::size_t steps = 0, done = 0, traces = 0;
  on_record_ = [&](const logs::Record& r) {
    if (std::holds_alternative<logs::StepRecord>(r)) ++steps;
    if (std::holds_alternative<logs::DoneRecord>(r)) ++done;
    if (std::holds_alternative<logs::TextLine>(r)) ++traces;
  };
  LaunchPlan p = plan(1, {"train", "3", "log-file", "{log_file}", "flood-mb", "256"});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  EXPECT_EQ(steps, 3u);
  EXPECT_EQ(done, 1u);
  // Every flood line read: 256 MiB of lines of 217 or 218 bytes.
  EXPECT_GT(traces, (std::size_t{256} << 20) / 220);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, FailingRankIsTheRootCauseWithItsErrorLine) {
  LaunchPlan p = plan(3, {"hang-after"});
  set_args(p, 1, {"train", "2", "exit", "3"});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kFailed) << result.summary();
  ASSERT_TRUE(result.root_cause);
  EXPECT_EQ(result.root_cause->rank, 1);
  EXPECT_EQ(result.root_cause->status.exit_code, 3);
  EXPECT_EQ(result.root_cause->first_error_line, "RuntimeError: rank 1 failed on purpose");
  EXPECT_EQ(result.failures.size(), 1u);
  EXPECT_TRUE(result.ranks[0].stopped_by_us);
  EXPECT_EQ(result.ranks[0].exit->signal, SIGTERM);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, CrashIsReportedWithItsSignalName) {
  LaunchPlan p = plan(2, {"hang-after"});
  set_args(p, 0, {"signal", "SEGV"});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kFailed);
  ASSERT_TRUE(result.root_cause);
  EXPECT_EQ(result.root_cause->rank, 0);
  EXPECT_EQ(result.root_cause->status.describe(), "killed by SIGSEGV");
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, RanksHangingBeforeRendezvousStall) {
  options_.limits.init_timeout = milliseconds(300);
  RunResult result = run(plan(2, {"hang-before"}));
  EXPECT_EQ(result.status, RunStatus::kStalled) << result.summary();
  ASSERT_FALSE(result.stalls.empty());
  EXPECT_TRUE(result.stalls[0].before_rendezvous);
  EXPECT_GE(result.stalls[0].silent_for, milliseconds(300));
  EXPECT_EQ(result.stalls[0].limit, milliseconds(300));
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, RankHangingAfterAStepStallsThereWhileOthersFinish) {
  // Long enough that rank 0, which prints all its steps in one burst, is never the one flagged.
  options_.limits.stall_timeout = milliseconds(1000);
  LaunchPlan p = plan(2, {"train", "3"});
  set_args(p, 1, {"train", "5", "hang-at", "2"});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kStalled) << result.summary();
  ASSERT_EQ(result.stalls.size(), 1u);
  EXPECT_EQ(result.stalls[0].rank, 1);
  EXPECT_EQ(result.stalls[0].last_step, 1);
  EXPECT_FALSE(result.stalls[0].before_rendezvous);
  EXPECT_TRUE(result.ranks[1].stopped_by_us);
  expect_nothing_left();
}

// The adaptive limit with real programs and the real clock: steps of 200 ms give a limit of
// max(2 s, 10 × 0.2 s) = 2 s once two steps are timed. Silences ten times a step are needed to
// trip it, so a loaded machine does not.
class AdaptiveLimitTest : public PlanExecutionProcessTest {
 protected:
  void SetUp() override {
    PlanExecutionProcessTest::SetUp();
    options_.limits = {seconds(60), seconds(60), true, seconds(2), 10, 2};
  }
};

TEST_F(AdaptiveLimitTest, AFirstStepTwentyTimesSlowerIsNoStall) {
  // Step 0 takes 4 s, twice the limit the later steps get.
  RunResult result = run(plan(1, {"train", "6", "step-ms", "200", "first-step-ms", "4000"}));
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  expect_nothing_left();
}

TEST_F(AdaptiveLimitTest, AnAnnouncedEvaluationIsNoStall) {
  // Before step 3 the rank logs `eval` start, is silent for 4 s, then logs `eval` end.
  RunResult result =
      run(plan(1, {"train", "6", "step-ms", "200", "eval-at", "3", "eval-ms", "4000"}));
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  expect_nothing_left();
}

// Issue 30 item 3: a rank quiet for 4 s after its `done` line (a last checkpoint, a process
// group torn down) was called stalled at the 2 s its steps' pace gives.
TEST_F(AdaptiveLimitTest, AQuietEndAfterTheDoneLineIsNoStall) {
  RunResult result = run(plan(1, {"train", "6", "step-ms", "200", "linger-ms", "4000"}));
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  expect_nothing_left();
}

TEST_F(AdaptiveLimitTest, AHangAfterTimedStepsStallsAtTheAdaptiveLimitWithItsDerivation) {
  RunResult result = run(plan(1, {"train", "8", "step-ms", "200", "hang-at", "4"}));
  EXPECT_EQ(result.status, RunStatus::kStalled) << result.summary();
  ASSERT_EQ(result.stalls.size(), 1u);
  EXPECT_EQ(result.stalls[0].last_step, 3);
  EXPECT_EQ(result.stalls[0].limit, seconds(2));
  EXPECT_EQ(result.stalls[0].limit_basis, "max(stall_min_s 2 s, 10 × median step 0.200 s)");
  EXPECT_NE(result.summary().find("limit 2.0 s: max(stall_min_s 2 s"), std::string::npos)
      << result.summary();
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, NonFiniteLossStopsTheRunAtItsStep) {
  LaunchPlan p = plan(2, {"train", "2", "hang-at", "1"});
  set_args(p, 0, {"train", "1000", "nan-at", "1", "hang-at", "2"});
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kNonFinite) << result.summary();
  ASSERT_TRUE(result.non_finite);
  EXPECT_EQ(result.non_finite->rank, 0);
  EXPECT_EQ(result.non_finite->global_step, 1);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, CancelStopsEvenRanksIgnoringSigtermAndTheirGrandchildren) {
  options_.term_grace = milliseconds(200);
  LaunchPlan p = plan(3, {"ignore-term"});
  set_args(p, 1, {"grandchild", "hang"});
  set_args(p, 2, {"grandchild"});
  std::atomic<bool> cancel{false};
  options_.cancel = &cancel;
  int lines = 0;
  on_record_ = [&](const logs::Record&) {
    if (++lines == 3) cancel = true;  // all three printed their first line
  };
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kInterrupted) << result.summary();
  EXPECT_EQ(result.ranks[0].exit->signal, SIGKILL);
  EXPECT_TRUE(result.failures.empty());
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, MissingTrainerIsALaunchFailure) {
  LaunchPlan p = plan(2, {"hang-after"});
  p.processes[1].spec.argv = {(dir_ / "no-trainer").string()};
  RunResult result = run(p);
  EXPECT_EQ(result.status, RunStatus::kLaunchFailed);
  ASSERT_TRUE(result.launch_error);
  EXPECT_NE(result.launch_error->message.find("no such file"), std::string::npos);
  EXPECT_TRUE(result.ranks[0].stopped_by_us);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, TorchrunLauncherRunsTheRealTorchrun) {
  if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  options_.term_grace = milliseconds(10000);
  int step_records = 0;
  std::set<int> ranks_seen;
  on_record_ = [&](const logs::Record& r) {
    if (std::holds_alternative<logs::StepRecord>(r)) {
      ++step_records;
      ranks_seen.insert(logs::origin_of(r).rank);
    }
  };
  RunResult result = run(plan(2, {"train", "2"}, "torchrun"));
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  EXPECT_EQ(step_records, 4);
  EXPECT_EQ(ranks_seen, (std::set<int>{0, 1}));
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[1].last_step, 1);
  expect_nothing_left();
}

TEST_F(PlanExecutionProcessTest, TorchrunFailureIsAttributedToTheWorkerTorchrunNames) {
  if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  options_.term_grace = milliseconds(10000);
  RunResult result = run(plan(2, {"train", "1", "exit", "3"}, "torchrun"));
  EXPECT_EQ(result.status, RunStatus::kFailed) << result.summary();
  ASSERT_TRUE(result.root_cause);
  const int rank = result.root_cause->rank;
  EXPECT_TRUE(rank == 0 || rank == 1) << rank;
  EXPECT_EQ(result.root_cause->status.exit_code, 3) << result.summary();
  EXPECT_EQ(result.root_cause->first_error_line,
            "RuntimeError: rank " + std::to_string(rank) + " failed on purpose");
  EXPECT_EQ(result.ranks[1].first_error_line, "RuntimeError: rank 1 failed on purpose");
  expect_nothing_left();
}

}  // namespace
}  // namespace bigmac::launch
