// srun's own lines as Slurm 22.05 prints them (launch_slurm.c _task_finish formats
// "%s: %s %s: Exited with exit code %d" and "%s: %s %s: %s%s" with strsignal(); the node
// failure and step-cancel lines were printed by srun 22.05.8 and slurmstepd on the local test
// cluster with `scontrol update nodename=n2 state=down` during a step).

#include "launch/srun_report.h"
#include "launch/slurm_step.h"

#include <gtest/gtest.h>

#include <csignal>

namespace bigmac::launch {
namespace {

TEST(SrunReport, ReadsTaskExitsWithHostsTasksAndStatus) {
  SrunReport report;
  EXPECT_TRUE(report.add("srun: error: n1: task 0: Exited with exit code 2"));
  EXPECT_TRUE(report.add("srun: error: n2: tasks 2-3: Killed"));
  EXPECT_TRUE(report.add("srun: error: n1: task 1: Segmentation fault (core dumped)"));
  ASSERT_EQ(report.task_exits().size(), 3u);
  const SrunTaskExit& first = report.task_exits()[0];
  EXPECT_EQ(first.hosts, "n1");
  EXPECT_EQ(first.tasks, (std::vector<int>{0}));
  EXPECT_EQ(first.status.exit_code, 2);
  EXPECT_EQ(first.status.signal, 0);
  EXPECT_EQ(report.task_exits()[1].tasks, (std::vector<int>{2, 3}));
  EXPECT_EQ(report.task_exits()[1].status.signal, SIGKILL);
  EXPECT_EQ(report.task_exits()[2].status.signal, SIGSEGV);
  ASSERT_NE(report.first_failure(), nullptr);
  EXPECT_EQ(report.first_failure()->tasks.front(), 0);
}

TEST(SrunReport, TheKillsSrunSendsAfterAFailureAreNotTheCause) {
  SrunReport report;
  report.add("srun: error: n1: tasks 0-1: Terminated");
  report.add("srun: error: n2: task 3: Exited with exit code 1");
  ASSERT_NE(report.first_failure(), nullptr);
  EXPECT_EQ(report.first_failure()->tasks, (std::vector<int>{3}));
}

TEST(SrunReport, ReadsNodeFailures) {
  SrunReport report;
  EXPECT_TRUE(
      report.add("slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT "
                 "2026-11-30T12:28:48 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"));
  EXPECT_TRUE(report.add("srun: error: Node failure on n2"));
  EXPECT_TRUE(report.add("srun: error: Node failure on n2"));
  EXPECT_TRUE(
      report.add("srun: Job step aborted: Waiting up to 7 seconds for job step to finish."));
  EXPECT_EQ(report.failed_nodes(), (std::vector<std::string>{"n2"}));
  EXPECT_EQ(report.node_failure_lines().size(), 3u);
}

TEST(SrunReport, LeavesTheRanksOwnLinesAlone) {
  SrunReport report;
  EXPECT_FALSE(report.add("RuntimeError: boom"));
  EXPECT_FALSE(report.add("bigmac-train: error: RANK and WORLD_SIZE must be set together"));
  EXPECT_TRUE(report.task_exits().empty());
  EXPECT_EQ(report.first_failure(), nullptr);
}

TEST(SrunReport, NamesSignalsTheWayStrsignalDoes) {
  EXPECT_EQ(signal_from_description("Killed"), SIGKILL);
  EXPECT_EQ(signal_from_description("Terminated"), SIGTERM);
  EXPECT_EQ(signal_from_description("Aborted"), SIGABRT);
  EXPECT_EQ(signal_from_description("Not a signal"), 0);
}

}  // namespace
}  // namespace bigmac::launch

namespace bigmac::launch {
namespace {

// The teardown's scancel: a failure is reported (the job may still hold its nodes), never
// dropped; nothing to cancel is not one.
TEST(CancelSlurmJob, AFailedScancelIsReportedWithItsCommand) {
  LaunchPlan plan;
  plan.slurm.job_name = "bigmac-1-02-dp.1";
  plan.slurm.scancel = "/bin/false";
  const std::string problem = cancel_slurm_job(plan, {});
  EXPECT_NE(problem.find("`/bin/false --quiet --name=bigmac-1-02-dp.1` failed (exit code 1)"),
            std::string::npos)
      << problem;
  plan.slurm.scancel = "/bin/true";
  EXPECT_EQ(cancel_slurm_job(plan, {}), "");
  plan.slurm.scancel = "/nonexistent/scancel";
  EXPECT_NE(cancel_slurm_job(plan, {}).find("could not run"), std::string::npos);
}

TEST(CancelSlurmJob, InsideAnAllocationWithoutAStepThereIsNothingToCancel) {
  LaunchPlan plan;
  plan.slurm.inside_allocation = true;
  plan.slurm.scancel = "/bin/false";
  EXPECT_EQ(cancel_slurm_job(plan, {}), "");
}

}  // namespace
}  // namespace bigmac::launch
