// execute_plan of a slurm plan against the scripted FakeProcessRunner: what srun and the
// wrapper print (the lines srun 22.05 and bigmac-rank-env print on the local test cluster)
// becomes per-rank exits, nodes, error lines and the root cause.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "launch/launch_planner.h"
#include "launch/plan_execution.h"
#include "testing/fake_clock.h"
#include "testing/fake_process_runner.h"

namespace bigmac::launch {
namespace {

using std::chrono::seconds;
using testing::FakeClock;
using testing::FakeProcessRunner;

class SrunExecutionTest : public ::testing::Test {
 protected:
  SrunExecutionTest() : runner_(&clock_) {
    config::Config c;
    c.launch.launcher = "slurm";
    c.launch.nnodes = 2;
    c.launch.nproc_per_node = 2;
    PlanInputs in;
    in.trainer_argv = {"/bin/true"};
    in.log_dir =
        std::filesystem::temp_directory_path() / ("bigmac-srun-unit-" + std::to_string(::getpid()));
    in.environment = [](const char*) -> const char* { return nullptr; };
    in.scancel_program = "/bin/true";  // the teardown's scancel, harmless here
    plan_ = *plan_launch(c, in);
    options_.limits = {seconds(30), seconds(10), true};
  }

  void placements() {
    for (int r = 0; r < 4; ++r) {
      runner_.emit_error_line(
          0, std::to_string(r) + ": bigmac-rank-env: placement rank=" + std::to_string(r) +
                 " local_rank=" + std::to_string(r % 2) + " node_rank=" + std::to_string(r / 2) +
                 " node=n" + std::to_string(r / 2 + 1) + " job_step=5.0 parent=100");
    }
  }

  RunResult run() { return execute_plan(plan_, runner_, clock_, options_); }

  FakeClock clock_;
  FakeProcessRunner runner_;
  LaunchPlan plan_;
  RunOptions options_;
};

TEST_F(SrunExecutionTest, TheFailingTaskIsTheRootCauseWithItsNodeAndOwnErrorLines) {
  placements();
  runner_.emit_error_line(0, "2: Traceback (most recent call last):");
  runner_.emit_error_line(0, "2: RuntimeError: boom on rank 2");
  runner_.emit_error_line(0, "srun: error: n2: task 2: Exited with exit code 1");
  runner_.emit_error_line(0, "srun: error: n1: tasks 0-1: Killed");
  runner_.emit_error_line(0, "srun: error: n2: task 3: Killed");
  runner_.exit(0, 1);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kFailed);
  ASSERT_TRUE(result.root_cause);
  EXPECT_EQ(result.root_cause->rank, 2);
  EXPECT_EQ(result.root_cause->node, "n2");
  EXPECT_EQ(result.root_cause->status.exit_code, 1);
  EXPECT_EQ(result.root_cause->first_error_line, "RuntimeError: boom on rank 2");
  ASSERT_EQ(result.ranks.size(), 4u);
  const RankOutcome& failed = result.ranks[2];
  EXPECT_EQ(failed.node, "n2");
  EXPECT_FALSE(failed.stopped_by_us);
  EXPECT_EQ(failed.exit->exit_code, 1);
  // Its own lines, without srun's label and without srun's own lines or the placement.
  EXPECT_EQ(failed.error_lines, (std::vector<std::string>{"Traceback (most recent call last):",
                                                          "RuntimeError: boom on rank 2"}));
  for (int r : {0, 1, 3}) {
    EXPECT_TRUE(result.ranks[r].stopped_by_us) << r;
    EXPECT_EQ(result.ranks[r].exit->signal, SIGKILL) << r;
    EXPECT_TRUE(result.ranks[r].error_lines.empty()) << r;
  }
  EXPECT_EQ(result.ranks[0].node, "n1");
  EXPECT_NE(result.summary().find("rank 2 on n2"), std::string::npos) << result.summary();
}

TEST_F(SrunExecutionTest, ANodeThatFailsMidGateIsTheRootCause) {
  placements();
  runner_.emit_error_line(0,
                          "0: slurmstepd-n1: error: *** STEP 5.0 ON n1 CANCELLED AT "
                          "2026-11-30T12:28:48 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR "
                          "DETAILS ***");
  runner_.emit_error_line(0, "srun: error: Node failure on n2");
  runner_.emit_error_line(
      0, "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.");
  runner_.emit_error_line(0, "srun: error: n1: tasks 0-1: Terminated");
  runner_.emit_error_line(0, "srun: error: n2: tasks 2-3: Terminated");
  runner_.exit(0, 143);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kFailed);
  ASSERT_TRUE(result.root_cause);
  EXPECT_EQ(result.root_cause->rank, 2);
  EXPECT_EQ(result.root_cause->node, "n2");
  EXPECT_NE(result.root_cause->first_error_line.find("node n2 failed"), std::string::npos);
  EXPECT_EQ(result.failed_nodes, (std::vector<std::string>{"n2"}));
  EXPECT_TRUE(result.ranks[3].node_failed);
  EXPECT_FALSE(result.ranks[0].node_failed);
  // slurmstepd's line is srun's report, not rank 0's error.
  EXPECT_TRUE(result.ranks[0].error_lines.empty());
  EXPECT_NE(result.summary().find("Node failure on n2"), std::string::npos);
}

TEST_F(SrunExecutionTest, ASuccessfulStepHasEveryRanksNode) {
  placements();
  runner_.exit(0, 0);
  RunResult result = run();
  EXPECT_EQ(result.status, RunStatus::kSucceeded);
  ASSERT_EQ(result.ranks.size(), 4u);
  EXPECT_EQ(result.ranks[1].node, "n1");
  EXPECT_EQ(result.ranks[2].node, "n2");
  EXPECT_EQ(result.ranks[2].exit->exit_code, 0);
  EXPECT_FALSE(result.ranks[2].stopped_by_us);
}

}  // namespace
}  // namespace bigmac::launch
