#pragma once

#include <functional>
#include <string>

#include "core/error.h"
#include "core/exit_code.h"
#include "run/run_state.h"
#include "run/run_transition.h"

namespace bigmac::run {

/// Runs one gate: plans it, launches its ranks, watches, evaluates, and says what the loop
/// observes: GateFinished (the ranks ran and were judged; the executor has printed the verdict),
/// Interrupted (Ctrl-C/SIGTERM stopped the ranks) or GateAborted (it could not launch or keep
/// its files: infrastructure). The real one is attempt::AttemptExecutor; tests use a fake, so
/// the whole run flow is tested without processes.
class GateExecutor {
 public:
  virtual ~GateExecutor() = default;
  virtual Observation execute(const std::string& gate, int attempt) = 0;
};

/// Where the loop reports: every transition line and every verdict.
struct RunOutput {
  std::function<Expected<void>(const RunState&)> persist;  ///< called after every transition
  std::function<void(const std::string&)> print;           ///< one line or block, no newline needed
  /// What only -v shows: every transition but those that say a gate will not run or will rerun
  /// (not applicable, invalidated). Unset: print.
  std::function<void(const std::string&)> detail;
};

struct RunLoopResult {
  RunState state;
  Action last;  ///< the terminal action
  ExitCode code = ExitCode::kOk;
};

/// The small loop of STYLE rule 5: observe -> decide -> persist -> act, until a terminal action.
/// Each decision's transition lines join the state's history before it is persisted.
RunLoopResult run_gates(RunState state, const Observation& start, GateExecutor& executor,
                        const RunOutput& output);

}  // namespace bigmac::run
