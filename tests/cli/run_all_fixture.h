#pragma once

// The fixture of the end-to-end tests of `bigmac-bringup run-all`: a fresh run directory and a
// port of its own per test, the real binaries, and helpers to read the run state and to find
// processes a run left behind.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/rank_harness.h"
#include "testing/run_program.h"

namespace bigmac::testing::e2e {

using bigmac::testing::ProgramResult;
using bigmac::testing::run_program;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

inline const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
inline const std::string kDemo = std::string(BIGMAC_SOURCE_DIR) + "/configs/demo.toml";
inline const std::string kTorchTrainer =
    std::string(BIGMAC_SOURCE_DIR) + "/configs/torch-trainer.toml";

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

  /// bigmac-bringup `args`, then --set for base_sets() and `sets`.
  std::vector<std::string> argv_of(const std::vector<std::string>& args,
                                   const std::vector<std::string>& sets) const {
    std::vector<std::string> argv = {kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> all = base_sets();
    all.insert(all.end(), sets.begin(), sets.end());
    for (const std::string& s : all) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    return argv;
  }

  /// run-all (or another command) on the demo config with a small, fast layout.
  ProgramResult bringup(std::vector<std::string> args, std::vector<std::string> sets = {}) {
    const std::vector<std::string> argv = argv_of(args, sets);
    // From the repository root, as a user runs it: example configs name their scripts
    // relative to it.
    return run_program(argv, {}, BIGMAC_SOURCE_DIR);
  }

  std::vector<std::string> base_sets() const {
    // A free port per test keeps parallel ctest runs apart. A stall limit of 20 s whatever the
    // step time (stall_min_s = the cap): a loaded machine must not turn a slow step into a stall;
    // tests of the adaptive limit set their own.
    return {"launch.master_port=" + std::to_string(port_), "launch.stall_timeout_s=20",
            "launch.stall_min_s=20", "launch.init_timeout_s=20",
            "trainer.binary=" + std::string(BIGMAC_BIN_DIR) + "/bigmac-train"};
  }

  /// The configuration under test: the built-in trainer's demo unless a fixture says otherwise.
  virtual std::string config() const { return kDemo; }

  std::vector<std::string> run_args(const std::string& command = "run-all") const {
    return {command,
            "-c",
            config(),
            "--run-dir",
            (root_ / "run").string(),
            "--no-baseline"};
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

  /// Processes (not zombies) whose command line contains every one of `needles`.
  static std::vector<pid_t> processes_with(const std::vector<std::string>& needles) {
    std::vector<pid_t> found;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(entry.path() / "cmdline", std::ios::binary);
      const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
      const pid_t pid = std::stoi(name);
      bool all = true;
      for (const std::string& n : needles) all = all && cmdline.find(n) != std::string::npos;
      if (all && bigmac::testing::process_state(pid) != 'Z') found.push_back(pid);
    }
    return found;
  }

  /// Processes whose command line names this test's run directory (ranks left behind).
  std::vector<pid_t> leftovers() const { return processes_with({(root_ / "run").string()}); }

  /// run-all in the background, to be interrupted: returns once gate `gate` is running.
  void start_until_running(bigmac::testing::RankHarness& harness, const std::string& gate,
                           const std::vector<std::string>& sets = {}) {
    harness.spawn(argv_of(run_args(), sets), {}, root_ / "out.txt", root_ / "err.txt");
    const bool running = bigmac::testing::wait_until(
        [&] {
          std::ifstream in(root_ / "run" / "state.json");
          if (!in) return false;
          try {
            const nlohmann::json s = nlohmann::json::parse(in);
            for (const auto& g : s.at("gates")) {
              if (g.at("id") == gate && g.at("status") == "running") return true;
            }
          } catch (const std::exception&) {
          }
          return false;
        },
        std::chrono::milliseconds(120000));
    ASSERT_TRUE(running) << "gate " << gate << " never started";
  }

  fs::path root_;
  int port_ = bigmac::testing::free_port();
};

}  // namespace bigmac::testing::e2e
