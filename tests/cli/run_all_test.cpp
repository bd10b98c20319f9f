// End-to-end: `bigmac-bringup run-all` bringing up the real bigmac-train through the gates,
// with real processes, and the fault matrix — each injected fault stopped at the gate that must
// catch it, by the check that must fire, with the run state saying so.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "testing/run_program.h"

namespace {

using ::testing::HasSubstr;
using bigmac::testing::ProgramResult;
using bigmac::testing::run_program;
namespace fs = std::filesystem;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kDemo = std::string(BIGMAC_SOURCE_DIR) + "/configs/demo.toml";

/// A fresh run directory per test and a port range of its own, so tests can run in parallel.
class RunAll : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("bigmac-runall-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  /// run-all (or another command) on the demo config with a small, fast layout.
  ProgramResult bringup(std::vector<std::string> args, std::vector<std::string> sets = {}) {
    std::vector<std::string> argv = {kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const std::string& s : base_sets()) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    for (const std::string& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    return run_program(argv);
  }

  std::vector<std::string> base_sets() const {
    // A port per test process keeps parallel ctest runs apart.
    const int port = 20000 + static_cast<int>(::getpid() % 20000);
    return {"launch.master_port=" + std::to_string(port), "launch.stall_timeout_s=20",
            "launch.init_timeout_s=20",
            "trainer.binary=" + std::string(BIGMAC_BIN_DIR) + "/bigmac-train"};
  }

  std::vector<std::string> run_args(const std::string& command = "run-all") const {
    return {command, "-c", kDemo, "--run-dir", (root_ / "run").string(), "--baseline",
            (root_ / "stored-baseline.json").string()};
  }

  nlohmann::json state() const {
    std::ifstream in(root_ / "run" / "state.json");
    return nlohmann::json::parse(in);
  }

  /// A field of one gate's row in state.json ("status", "failed_check").
  std::string gate_field(const std::string& gate, const std::string& field) const {
    const nlohmann::json s = state();
    for (const auto& g : s.at("gates")) {
      if (g.at("id") == gate) return g.value(field, "");
    }
    return "missing";
  }
  std::string gate_status(const std::string& gate) const { return gate_field(gate, "status"); }

  fs::path root_;
};

TEST_F(RunAll, SingleAndDataParallelPassAndRecordABaseline) {
  ProgramResult r = bringup({"run-all", "-c", kDemo, "--run-dir", (root_ / "run").string(),
                             "--baseline", (root_ / "stored-baseline.json").string(), "--until",
                             "dp"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_EQ(gate_status("dp"), "passed");
  EXPECT_TRUE(fs::exists(root_ / "run" / "baseline.json"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "01-single.1" / "gate.toml"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "02-dp.1" / "verdict.json"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "02-dp.1" / "launch-plan.json"));

  // status reads it back; baseline record promotes the first gate.
  ProgramResult status = run_program({kBinary, "status", (root_ / "run").string()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("dp"));
  ProgramResult record =
      run_program({kBinary, "baseline", "record", (root_ / "run").string(), "--out",
                   (root_ / "promoted.json").string()});
  EXPECT_EQ(record.exit_code, 0) << record.out << record.err;
  EXPECT_TRUE(fs::exists(root_ / "promoted.json"));
}

/// One row of the fault matrix: a fault, the gate that must stop the run, the check that must
/// fire there.
struct FaultRow {
  std::string name;
  std::vector<std::string> sets;
  std::string gate;
  std::string check;
};

class FaultMatrix : public RunAll, public ::testing::WithParamInterface<FaultRow> {};

TEST_P(FaultMatrix, StopsAtTheGateThatMustCatchIt) {
  const FaultRow& row = GetParam();
  ProgramResult r = bringup(run_args(), row.sets);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_status(row.gate), "failed") << r.out;
  EXPECT_EQ(gate_field(row.gate, "failed_check"), row.check) << r.out;
  EXPECT_THAT(r.out, HasSubstr(row.check));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultMatrix,
    ::testing::Values(
        FaultRow{"nan_at_step", {"faults.nan_at_step=3"}, "single", "finite_loss"},
        FaultRow{"skip_step_log", {"faults.skip_step_log=4"}, "single", "step_sequence"},
        FaultRow{"dup_step_log", {"faults.dup_step_log=4"}, "single", "step_sequence"},
        FaultRow{"crash_rank", {"faults.crash_rank=0:3"}, "single", "exit_status"},
        FaultRow{"lr_scale_by_world", {"faults.lr_scale_by_world=true"}, "dp", "lr_vs_baseline"},
        FaultRow{"hang_rank", {"faults.hang_rank=1:2", "launch.stall_timeout_s=3"}, "dp",
                 "exit_status"}),
    [](const ::testing::TestParamInfo<FaultRow>& row) { return row.param.name; });

}  // namespace
