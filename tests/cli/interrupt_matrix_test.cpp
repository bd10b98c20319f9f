// End-to-end: the kill -9 and Ctrl-C matrix for every launcher that runs here (builtin,
// torchrun, and a command trainer whose own helper leaves the process group). Whatever stops the
// orchestrator mid-gate: no process of the run survives it, the run state is resumable, no
// passed gate is lost, and Ctrl-C or a hang-up exits 130.

#include <csignal>

#include "run_all_fixture.h"

namespace {

using namespace bigmac::testing::e2e;

struct MatrixRow {
  std::string name;
  std::vector<std::string> sets;
  int signal;
};

void PrintTo(const MatrixRow& row, std::ostream* os) { *os << row.name; }

class InterruptMatrix : public RunAll, public ::testing::WithParamInterface<MatrixRow> {
 protected:
  void SetUp() override {
    const bool torchrun = GetParam().name.find("torchrun") != std::string::npos;
    if (torchrun && !fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
    RunAll::SetUp();
  }

  int attempts(const std::string& gate) const {
    const nlohmann::json s = state();
    for (const auto& g : s.at("gates")) {
      if (g.at("id") == gate) return g.value("attempts", 0);
    }
    return -1;
  }
};

TEST_P(InterruptMatrix, NothingSurvivesAndResumeLosesNoPassedGate) {
  const MatrixRow& row = GetParam();
  bigmac::testing::RankHarness harness;
  start_until_running(harness, "dp", row.sets);
  ASSERT_EQ(gate_status("single"), "passed");
  if (row.name.rfind("forking", 0) == 0) {
    // The trainers' helpers (in sessions of their own) run before the orchestrator is stopped.
    ASSERT_TRUE(bigmac::testing::wait_until(
        [&] {
          return !processes_with({"helper-of", (root_ / "run").string()}).empty();
        },
        std::chrono::milliseconds(60000)));
  }
  // Only the orchestrator gets the signal: its ranks run in a process group of their own.
  harness.signal_all(row.signal);
  ASSERT_TRUE(harness.wait_all(std::chrono::milliseconds(120000)));
  if (row.signal == SIGINT || row.signal == SIGHUP) {
    // SIGHUP (the ssh session or terminal closed) stops the run as Ctrl-C does; it killed the
    // orchestrator with 129 and left the state "running" with no reports.
    EXPECT_EQ(harness.end(0)->code, 130);
    EXPECT_EQ(state().at("phase"), "interrupted");
    EXPECT_TRUE(fs::exists(root_ / "run" / "junit.xml"));
  } else {
    EXPECT_TRUE(harness.end(0)->signaled);
    EXPECT_EQ(gate_status("dp"), "running") << "saved before the gate started";
  }
  const bool none_left = bigmac::testing::wait_until([&] { return leftovers().empty(); },
                                                     std::chrono::milliseconds(60000));
  for (pid_t pid : leftovers()) {
    ADD_FAILURE() << "left running: pid " << pid;
    ::kill(pid, SIGKILL);
  }
  ASSERT_TRUE(none_left);

  std::vector<std::string> resume = {"resume", (root_ / "run").string(), "-c", config(),
                                     "--no-baseline"};
  ProgramResult resumed = bringup(resume, row.sets);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_status(gate), "passed") << gate;
  }
  EXPECT_EQ(attempts("single"), 1) << "the passed gate was kept, not rerun";
  EXPECT_THAT(resumed.out, ::testing::Not(HasSubstr("invalidated")));
  EXPECT_TRUE(leftovers().empty());
}

std::vector<std::string> forking_command_trainer() {
  const std::string script =
      std::string(BIGMAC_SOURCE_DIR) + "/tests/cli/fixtures/forking_trainer.py";
  const std::string train = std::string(BIGMAC_BIN_DIR) + "/bigmac-train";
  return {"trainer.kind=\"command\"",
          "trainer.command=[\"/usr/bin/python3\", \"" + script + "\", \"{run_dir}\", \"" + train +
              "\", \"--config\", \"{gate_config}\", \"--log-file\", \"{log_file}\"]"};
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, InterruptMatrix,
    ::testing::Values(
        MatrixRow{"builtin_sigkill", {}, SIGKILL}, MatrixRow{"builtin_ctrl_c", {}, SIGINT},
        MatrixRow{"builtin_sighup", {}, SIGHUP},
        MatrixRow{"torchrun_sigkill", {"launch.launcher=\"torchrun\""}, SIGKILL},
        MatrixRow{"torchrun_ctrl_c", {"launch.launcher=\"torchrun\""}, SIGINT},
        MatrixRow{"forking_command_trainer_sigkill", forking_command_trainer(), SIGKILL},
        MatrixRow{"forking_command_trainer_ctrl_c", forking_command_trainer(), SIGINT}),
    [](const ::testing::TestParamInfo<MatrixRow>& row) { return row.param.name; });

}  // namespace
