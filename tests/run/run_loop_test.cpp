#include "run/run_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <map>

#include "run/run_directory.h"

namespace bigmac::run {
namespace {

const std::vector<std::string> kGates = {"single", "dp", "pp2", "shapes", "target"};

GateFinished pass_outcome(const std::string& gate, const std::string& seed = "1234") {
  GateFinished o;
  o.gate = gate;
  o.passed = true;
  o.summary = "gate " + gate + ": PASSED";
  o.inputs.config = {{"train.seed", seed}};
  o.inputs.trainer = "bigmac-train 100 1";
  return o;
}

GateFinished fail_outcome(const std::string& gate, const std::string& check,
                          const std::string& route) {
  GateFinished o;
  o.gate = gate;
  o.summary = "gate " + gate + ": FAILED at " + check;
  o.failed_check = check;
  o.route_back = route;
  return o;
}

/// Scripted outcomes per gate (default: pass); remembers what ran and what state.json said then.
class FakeExecutor : public GateExecutor {
 public:
  explicit FakeExecutor(std::filesystem::path dir = {}) : dir_(std::move(dir)) {}
  Observation execute(const std::string& gate, int attempt) override {
    ran.push_back(gate + "#" + std::to_string(attempt));
    if (!dir_.empty()) {
      auto saved = read_run_state(dir_);
      saved_status_during_run.push_back(saved ? std::string(status_name(saved->find(gate)->status))
                                              : "unreadable");
    }
    auto& queue = script[gate];
    if (queue.empty()) return pass_outcome(gate, seed);
    Observation o = queue.front();
    queue.pop_front();
    return o;
  }
  std::map<std::string, std::deque<Observation>> script;
  std::vector<std::string> ran;
  std::vector<std::string> saved_status_during_run;
  std::string seed = "1234";

 private:
  std::filesystem::path dir_;
};

class RunLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("bigmac-runloop-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    auto dir = RunDirectory::open(root_);
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    output_.persist = [this](const RunState& s) {
      ++saves_;
      return dir_->save(s);
    };
    output_.print = [this](const std::string& line) { printed_ += line + "\n"; };
  }
  void TearDown() override {
    dir_.reset();
    std::filesystem::remove_all(root_);
  }
  RunState stored() { return **dir_->load(); }

  std::filesystem::path root_;
  std::optional<RunDirectory> dir_;
  RunOutput output_;
  int saves_ = 0;
  std::string printed_;
};

TEST_F(RunLoop, RunAllPassesEveryGateInOrderAndSavesEachTransition) {
  FakeExecutor exec(root_);
  const RunLoopResult r = run_gates(RunState::fresh("r", kGates), Begin{}, exec, output_);
  EXPECT_EQ(r.code, ExitCode::kOk);
  EXPECT_EQ(exec.ran,
            (std::vector<std::string>{"single#1", "dp#1", "pp2#1", "shapes#1", "target#1"}));
  // Saved as running before each launch: a SIGKILL mid-gate leaves a resumable record.
  EXPECT_EQ(exec.saved_status_during_run, std::vector<std::string>(5, "running"));
  EXPECT_EQ(saves_, 6);
  EXPECT_EQ(stored().phase(), RunPhase::kPassed);
  EXPECT_NE(printed_.find("single: pending -> running"), std::string::npos) << printed_;
  // The state's history is the decisions' lines, each once: running and passed per gate.
  const std::vector<std::string> history = stored().history;
  ASSERT_EQ(history.size(), 10u);
  EXPECT_EQ(history.front(), "single: pending -> running");
  EXPECT_EQ(history.back(), "target: running -> passed");
}

// -v's lines go to `detail`; a gate that will not run (not applicable) or reruns (invalidated)
// is said whatever the verbosity. (The verdicts are the executor's to print.)
TEST_F(RunLoop, TransitionsAreDetailsButAGateThatWillNotRunIsSaid) {
  std::string details;
  output_.detail = [&](const std::string& line) { details += line + "\n"; };
  FakeExecutor exec(root_);
  Begin begin;
  begin.not_applicable = {{"pp2", "no pipeline stages"}, {"shapes", "no pipeline stages"}};
  const RunLoopResult r = run_gates(RunState::fresh("r", kGates), begin, exec, output_);
  EXPECT_EQ(r.code, ExitCode::kOk);
  EXPECT_NE(details.find("single: pending -> running"), std::string::npos) << details;
  EXPECT_EQ(printed_.find("-> running"), std::string::npos) << printed_;
  EXPECT_NE(printed_.find("pp2: pending -> not applicable (no pipeline stages)"), std::string::npos)
      << printed_;
}

TEST_F(RunLoop, StopsAtTheFirstFailureAndResumeContinuesThere) {
  FakeExecutor exec;
  exec.script["pp2"].push_back(fail_outcome("pp2", "layer_coverage", "pp2"));
  const RunLoopResult r = run_gates(RunState::fresh("r", kGates), Begin{}, exec, output_);
  EXPECT_EQ(r.code, ExitCode::kGateFailed);
  EXPECT_EQ(exec.ran, (std::vector<std::string>{"single#1", "dp#1", "pp2#1"}));
  EXPECT_EQ(std::get<StopWithFailure>(r.last).check, "layer_coverage");
  EXPECT_EQ(stored().find("pp2")->status, GateStatus::kFailed);
  EXPECT_EQ(stored().find("pp2")->failed_check, "layer_coverage");
  EXPECT_NE(printed_.find("pp2: running -> failed (layer_coverage)"), std::string::npos)
      << printed_;

  exec.ran.clear();
  const RunLoopResult resumed = run_gates(stored(), Resume{}, exec, output_);
  EXPECT_EQ(resumed.code, ExitCode::kOk);
  EXPECT_EQ(exec.ran, (std::vector<std::string>{"pp2#2", "shapes#1", "target#1"}));
}

TEST_F(RunLoop, InterruptedThenResumed) {
  FakeExecutor exec;
  exec.script["dp"].push_back(Interrupted{});
  const RunLoopResult r = run_gates(RunState::fresh("r", kGates), Begin{}, exec, output_);
  EXPECT_EQ(r.code, ExitCode::kInterrupted);
  EXPECT_EQ(stored().phase(), RunPhase::kInterrupted);
  EXPECT_EQ(stored().find("dp")->status, GateStatus::kInterrupted);
  exec.ran.clear();
  EXPECT_EQ(run_gates(stored(), Resume{}, exec, output_).code, ExitCode::kOk);
  EXPECT_EQ(exec.ran.front(), "dp#2");
}

TEST_F(RunLoop, KilledMidGateResumesFromTheSavedRunningGate) {
  // The orchestrator dies inside dp: the executor never returns, state.json says running.
  struct Dying : FakeExecutor {
    Observation execute(const std::string& gate, int attempt) override {
      if (gate == "dp") throw std::runtime_error("SIGKILL");
      return FakeExecutor::execute(gate, attempt);
    }
  } dying;
  EXPECT_THROW(run_gates(RunState::fresh("r", kGates), Begin{}, dying, output_),
               std::runtime_error);
  const RunState after_kill = stored();
  EXPECT_EQ(after_kill.find("single")->status, GateStatus::kPassed);
  EXPECT_EQ(after_kill.find("dp")->status, GateStatus::kRunning);
  FakeExecutor exec;
  EXPECT_EQ(run_gates(after_kill, Resume{}, exec, output_).code, ExitCode::kOk);
  EXPECT_EQ(exec.ran, (std::vector<std::string>{"dp#2", "pp2#1", "shapes#1", "target#1"}));
}

TEST_F(RunLoop, ConfigChangeInvalidatesAndReruns) {
  FakeExecutor exec;
  ASSERT_EQ(run_gates(RunState::fresh("r", kGates), Begin{}, exec, output_).code, ExitCode::kOk);
  exec.ran.clear();
  exec.seed = "7";
  gates::GateInputs old_inputs{{{"train.seed", "1234"}}, "bigmac-train 100 1", ""};
  gates::GateInputs new_inputs{{{"train.seed", "7"}}, "bigmac-train 100 1", ""};
  std::map<std::string, gates::GateInputs> now;
  for (const std::string& g : kGates) now[g] = g == "single" ? old_inputs : new_inputs;
  printed_.clear();
  const RunLoopResult r = run_gates(stored(), Resume{now, {}}, exec, output_);
  EXPECT_EQ(r.code, ExitCode::kOk);
  EXPECT_EQ(exec.ran, (std::vector<std::string>{"dp#2", "pp2#2", "shapes#2", "target#2"}));
  EXPECT_NE(printed_.find("dp: passed -> invalidated (train.seed changed 1234 -> 7)"),
            std::string::npos)
      << printed_;
}

TEST_F(RunLoop, AbortedAndRefusedAndUnsavable) {
  FakeExecutor exec;
  exec.script["single"].push_back(GateAborted{"single", "bigmac-train: not found"});
  EXPECT_EQ(run_gates(RunState::fresh("r", kGates), Begin{}, exec, output_).code,
            ExitCode::kInfrastructure);
  EXPECT_EQ(stored().message, "bigmac-train: not found");

  exec.ran.clear();
  EXPECT_EQ(run_gates(RunState::fresh("r", kGates), Begin{"dp", "dp", {}, {}}, exec, output_).code,
            ExitCode::kBadInput);
  EXPECT_TRUE(exec.ran.empty());

  RunOutput broken = output_;
  broken.persist = [](const RunState&) -> Expected<void> {
    return tl::unexpected(make_error(ErrorKind::kInfrastructure, "disk full"));
  };
  EXPECT_EQ(run_gates(RunState::fresh("r", kGates), Begin{}, exec, broken).code,
            ExitCode::kInfrastructure);
  EXPECT_TRUE(exec.ran.empty());  // nothing launched without a saved state
}

}  // namespace
}  // namespace bigmac::run
