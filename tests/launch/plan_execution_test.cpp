// execute_plan against the scripted FakeProcessRunner and a FakeClock: every verdict without
// real processes or real waiting.
#include "launch/plan_execution.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <utility>

#include "launch/launch_planner.h"
#include "testing/fake_clock.h"
#include "testing/fake_process_runner.h"

namespace bigmac::launch {
namespace {

using std::chrono::seconds;
using testing::FakeClock;
using testing::FakeProcessRunner;

std::string step_line(int rank, int step, const std::string& loss) {
  return "{\"ev\":\"step\",\"rank\":" + std::to_string(rank) +
         ",\"t\":0,\"global_step\":" + std::to_string(step) + ",\"loss\":" + loss + "}";
}
std::string pg_ready_line(int rank) {
  return "{\"ev\":\"pg_ready\",\"rank\":" + std::to_string(rank) + ",\"t\":0,\"world_size\":2}";
}

class PlanExecutionTest : public ::testing::Test {
 protected:
  PlanExecutionTest() : runner_(&clock_) {
    config::Config c;
    c.launch.nproc_per_node = 2;
    PlanInputs in;
    in.trainer_argv = {"/bin/true"};
    in.log_dir =
        std::filesystem::temp_directory_path() / ("bigmac-exec-unit-" + std::to_string(::getpid()));
    plan_ = *plan_launch(c, in);
    options_.limits = {seconds(30), seconds(10), true};
    options_.poll_interval = std::chrono::milliseconds(500);
  }

  RunResult run() {
    return execute_plan(plan_, runner_, clock_, options_,
                        [this](const logs::Record& r, RecordSource) { records_.push_back(r); });
  }

  FakeClock clock_;
  FakeProcessRunner runner_;
  LaunchPlan plan_;
  RunOptions options_;
  std::vector<logs::Record> records_;
};

TEST_F(PlanExecutionTest, AllRanksExitingZeroSucceeds) {
  for (int r = 0; r < 2; ++r) {
    runner_.emit_line(r, pg_ready_line(r));
    runner_.emit_line(r, step_line(r, 0, "2.5"));
  }
  runner_.wait_seconds(3);
  runner_.exit(0, 0);
  runner_.exit(1, 0);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  EXPECT_FALSE(result.root_cause);
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_TRUE(result.ranks[1].rendezvous_done);
  EXPECT_EQ(result.ranks[1].last_step, 0);
  EXPECT_EQ(result.ranks[1].duration, seconds(3));
  EXPECT_FALSE(result.ranks[1].silent_at_stop.has_value());
  EXPECT_FALSE(result.ranks[1].stopped_by_us);
  EXPECT_EQ(result.duration, seconds(3));
  EXPECT_EQ(records_.size(), 4u);
  EXPECT_EQ(runner_.spawned().size(), 2u);
  EXPECT_EQ(runner_.sigterm_sent(), 0);
}

TEST_F(PlanExecutionTest, EarliestFailureIsTheRootCauseAndTheRestIsStopped) {
  runner_.emit_error_line(1, "Traceback (most recent call last):");
  runner_.emit_error_line(1, "RuntimeError: shapes do not match");
  runner_.wait_seconds(2);
  runner_.exit(1, 1);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kFailed);
  ASSERT_TRUE(result.root_cause);
  EXPECT_EQ(result.root_cause->rank, 1);
  EXPECT_EQ(result.root_cause->status.exit_code, 1);
  EXPECT_EQ(result.root_cause->first_error_line, "RuntimeError: shapes do not match");
  EXPECT_EQ(result.root_cause->at, seconds(2));
  EXPECT_EQ(result.root_cause->describe(),
            "rank 1 (pid 1002) exit code 1 after 2.0 s: RuntimeError: shapes do not match");
  EXPECT_EQ(runner_.sigterm_sent(), 1);
  EXPECT_TRUE(result.ranks[0].stopped_by_us);
  EXPECT_EQ(result.ranks[0].exit->signal, SIGTERM);
  EXPECT_EQ(result.failures.size(), 1u);  // the rank we stopped is not a failure
}

TEST_F(PlanExecutionTest, FailuresInOnePollAreOrderedAndTheFirstWins) {
  runner_.kill_by(0, SIGSEGV);
  runner_.exit(1, 3);
  RunResult result = run();
  ASSERT_EQ(result.failures.size(), 2u);
  EXPECT_EQ(result.root_cause->rank, 0);
  EXPECT_EQ(result.root_cause->status.describe(), "killed by SIGSEGV");
}

TEST_F(PlanExecutionTest, SilenceBeforeRendezvousStallsAtTheInitTimeout) {
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kStalled);
  ASSERT_EQ(result.stalls.size(), 2u);
  EXPECT_TRUE(result.stalls[0].before_rendezvous);
  EXPECT_EQ(result.stalls[0].silent_for, seconds(30));
  EXPECT_EQ(result.stalls[0].limit, seconds(30));
  EXPECT_TRUE(result.ranks[0].stopped_by_us);
}

TEST_F(PlanExecutionTest, FirstRankPastItsLimitEndsTheRunAndStubbornRanksAreKilled) {
  runner_.emit_line(0, pg_ready_line(0));  // rank 1 never reaches the rendezvous
  runner_.ignore_sigterm(1);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kStalled) << result.summary();
  ASSERT_FALSE(result.stalls.empty());
  // Rank 0 passed rendezvous and stalls at 10 s; the verdict comes then, before rank 1's 30 s,
  // and names rank 1 first: it never reached the rendezvous rank 0 waits in.
  ASSERT_EQ(result.stalls.size(), 2u);
  EXPECT_EQ(result.stalls[0].rank, 1);
  EXPECT_TRUE(result.stalls[0].before_rendezvous);
  EXPECT_EQ(result.stalls[1].rank, 0);
  EXPECT_FALSE(result.stalls[1].before_rendezvous);
  EXPECT_EQ(result.stalls[1].silent_for, seconds(10));
  EXPECT_EQ(runner_.sigkill_sent(), 1);
  EXPECT_EQ(result.ranks[1].exit->signal, SIGKILL);
}

TEST_F(PlanExecutionTest, StallIsReportedWithItsStepAtTheLimitNotAPollLater) {
  options_.poll_interval = std::chrono::milliseconds(3000);
  for (int r = 0; r < 2; ++r) runner_.emit_line(r, pg_ready_line(r));
  runner_.emit_line(0, step_line(0, 4, "1.0"));
  runner_.emit_line(1, step_line(1, 4, "1.0"));
  int idle = 0;
  // Rank 1 keeps stepping for 6 more seconds; rank 0 goes silent after step 4.
  runner_.on_idle_poll = [&](FakeProcessRunner& r) {
    if (++idle <= 3) {
      r.wait_seconds(2);
      r.emit_line(1, step_line(1, 4 + idle, "0.9"));
    }
  };
  const Clock::time_point start = clock_.now();
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kStalled);
  ASSERT_EQ(result.stalls.size(), 1u);
  EXPECT_EQ(result.stalls[0].rank, 0);
  EXPECT_EQ(result.stalls[0].last_step, 4);
  EXPECT_EQ(result.stalls[0].silent_for, seconds(10));
  EXPECT_EQ(clock_.now() - start, seconds(10));
  EXPECT_EQ(result.ranks[0].silent_at_stop, seconds(10));
  EXPECT_EQ(result.ranks[1].silent_at_stop, seconds(4));
}

TEST_F(PlanExecutionTest, NonFiniteLossStopsTheGateAtThatStep) {
  for (int r = 0; r < 2; ++r) runner_.emit_line(r, pg_ready_line(r));
  runner_.emit_line(1, step_line(1, 0, "2.0"));
  runner_.emit_line(1, step_line(1, 1, "NaN"));
  runner_.emit_line(1, step_line(1, 2, "NaN"));
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kNonFinite);
  ASSERT_TRUE(result.non_finite);
  EXPECT_EQ(result.non_finite->rank, 1);
  EXPECT_EQ(result.non_finite->global_step, 1);
  EXPECT_TRUE(std::isnan(result.non_finite->loss));
  EXPECT_EQ(runner_.sigterm_sent(), 1);
}

TEST_F(PlanExecutionTest, NonFiniteLossCanRunOn) {
  options_.limits.stop_on_non_finite = false;
  runner_.emit_line(1, step_line(1, 0, "NaN"));
  runner_.exit(0, 0);
  runner_.exit(1, 0);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kSucceeded);
  ASSERT_TRUE(result.non_finite);
  EXPECT_EQ(result.non_finite->global_step, 0);
}

TEST_F(PlanExecutionTest, CancelTearsDownAndReportsInterrupted) {
  std::atomic<bool> cancel{false};
  options_.cancel = &cancel;
  runner_.on_idle_poll = [&](FakeProcessRunner&) { cancel = true; };
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kInterrupted);
  EXPECT_EQ(runner_.sigterm_sent(), 1);
  EXPECT_TRUE(result.failures.empty());
}

TEST_F(PlanExecutionTest, AStopRequestEndsTheRunAsStoppedEarlyAtTheStepThatDecidedIt) {
  for (int r = 0; r < 2; ++r) runner_.emit_line(r, pg_ready_line(r));
  runner_.emit_line(0, step_line(0, 0, "4.0"));
  int steps_seen_when_asked = -1;
  options_.stop_request = [&]() -> std::optional<std::string> {
    steps_seen_when_asked = 0;
    for (const logs::Record& r : records_) {
      if (const auto* s = std::get_if<logs::StepRecord>(&r)) {
        ++steps_seen_when_asked;
        if (s->loss && *s->loss > 8) return "loss diverges at step 1";
      }
    }
    return std::nullopt;
  };
  int idle = 0;
  runner_.on_idle_poll = [&](FakeProcessRunner& r) {
    r.wait_seconds(1);
    ++idle;
    r.emit_line(0, step_line(0, idle, idle == 1 ? "9.0" : "3.0"));
  };
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kStoppedEarly) << result.summary();
  EXPECT_EQ(result.stop_reason, "loss diverges at step 1");
  EXPECT_EQ(steps_seen_when_asked, 2) << "decided at the step that settled it, not later";
  EXPECT_EQ(runner_.sigterm_sent(), 1);
  EXPECT_TRUE(result.ranks[0].stopped_by_us);
  EXPECT_TRUE(result.failures.empty());
  EXPECT_NE(result.summary().find("stopped early"), std::string::npos);
  EXPECT_NE(result.summary().find("loss diverges at step 1"), std::string::npos);
}

TEST_F(PlanExecutionTest, AStopRequestIsAskedOnlyAfterNewStepsAndNeverOnceTheRanksExited) {
  int asked = 0;
  options_.stop_request = [&]() -> std::optional<std::string> {
    ++asked;
    return "stop";
  };
  for (int r = 0; r < 2; ++r) {
    runner_.emit_line(r, pg_ready_line(r));
    runner_.emit_line(
        r, "{\"ev\":\"heartbeat\",\"rank\":" + std::to_string(r) + ",\"t\":0,\"global_step\":0}");
  }
  int idle = 0;
  runner_.on_idle_poll = [&](FakeProcessRunner& r) {
    if (++idle == 3) {
      r.emit_line(0, step_line(0, 0, "4.0"));
      r.exit(0, 0);
      r.exit(1, 0);
    }
  };
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kSucceeded) << result.summary();
  EXPECT_EQ(asked, 0);
}

TEST_F(PlanExecutionTest, SpawnFailureStopsWhatStartedAndSaysWhy) {
  runner_.fail_spawn(1, make_error(ErrorKind::kInfrastructure, "rank 1: cannot execute 'x'"));
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kLaunchFailed);
  ASSERT_TRUE(result.launch_error);
  EXPECT_EQ(result.launch_error->message, "rank 1: cannot execute 'x'");
  EXPECT_EQ(runner_.sigterm_sent(), 1);
  EXPECT_FALSE(result.ranks[1].exit.has_value());
  EXPECT_NE(result.summary().find("launch failed"), std::string::npos);
}

TEST_F(PlanExecutionTest, OutputSplitAcrossChunksIsStillOneRecord) {
  runner_.emit(0, proc::Stream::kStdout, "{\"ev\":\"pg_ready\",\"rank\":0,");
  runner_.emit(0, proc::Stream::kStdout, "\"t\":0,\"world_size\":2}\n");
  runner_.exit(0, 0);
  runner_.exit(1, 0);
  RunResult result = run();
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<logs::PgReadyRecord>(records_[0]));
  EXPECT_TRUE(result.ranks[0].rendezvous_done);
}

TEST_F(PlanExecutionTest, RankLogFileIsProgress) {
  std::filesystem::create_directories(plan_.log_dir);
  std::ofstream log(plan_.ranks[1].log_path);
  log << pg_ready_line(1) << "\n" << step_line(1, 0, "2.0") << "\n" << std::flush;
  runner_.emit_line(0, pg_ready_line(0));
  runner_.wait_seconds(5);
  bool written = false;
  runner_.on_idle_poll = [&](FakeProcessRunner&) {
    if (!std::exchange(written, true)) {
      log << step_line(1, 1, "1.5") << "\n" << std::flush;  // rank 1 keeps writing its file
    }
  };
  RunResult result = run();
  std::filesystem::remove_all(plan_.log_dir);
  EXPECT_EQ(result.status, RunStatus::kStalled);
  ASSERT_EQ(result.stalls.size(), 1u);
  EXPECT_EQ(result.stalls[0].rank, 0);  // rank 0 went silent first; rank 1's file kept it alive
  EXPECT_EQ(result.ranks[1].last_step, 1);
  EXPECT_TRUE(result.ranks[1].rendezvous_done);
  EXPECT_EQ(records_.size(), 4u);
}

TEST_F(PlanExecutionTest, PerRankFirstErrorLineComesFromItsOwnStderr) {
  runner_.emit_error_line(0, "error: zero");
  runner_.emit_error_line(1, "error: one");
  runner_.exit(1, 2);
  RunResult result = run();
  EXPECT_EQ(result.ranks[0].first_error_line, "error: zero");
  EXPECT_EQ(result.ranks[1].first_error_line, "error: one");
}

TEST(RunOptionsFor, TakesTheLimitsFromTheLaunchLayer) {
  config::LaunchConfig launch;
  launch.init_timeout_s = 90;
  launch.stall_timeout_s = 2.5;
  RunOptions options = run_options_for(launch);
  EXPECT_EQ(options.limits.init_timeout, seconds(90));
  EXPECT_EQ(options.limits.stall_timeout, std::chrono::milliseconds(2500));
  EXPECT_TRUE(options.limits.stop_on_non_finite);
}

}  // namespace
}  // namespace bigmac::launch
