#pragma once

#include <functional>
#include <string>

#include "core/error.h"
#include "core/exit_code.h"
#include "gates/gate_verdict.h"
#include "gates/run_state.h"
#include "gates/run_transition.h"

namespace bigmac::gates {

/// How a gate attempt ended, as the executor reports it.
struct GateOutcome {
  enum class Kind {
    kVerdict,      ///< the ranks ran and were evaluated
    kInterrupted,  ///< Ctrl-C/SIGTERM: ranks stopped
    kAborted,      ///< could not launch (infrastructure)
  };
  Kind kind = Kind::kVerdict;
  GateVerdict verdict;
  GateInputs inputs;    ///< what the gate ran with (plan inputs, trainer, baseline digest)
  std::string message;  ///< kAborted: why
};

/// Runs one gate: plans it, launches its ranks, watches, evaluates. The real one (launcher +
/// checks) is the CLI's; tests use a fake, so the whole run flow is tested without processes.
class GateExecutor {
 public:
  virtual ~GateExecutor() = default;
  virtual GateOutcome execute(const std::string& gate, int attempt) = 0;
};

/// Where the loop reports: every transition line and every verdict.
struct RunOutput {
  std::function<Expected<void>(const RunState&)> persist;  ///< called after every transition
  std::function<void(const std::string&)> print;           ///< one line or block, no newline needed
  /// What only -v shows: every transition but those that say a gate will not run or will rerun
  /// (not applicable, invalidated), and each verdict's list of checks. Unset: print.
  std::function<void(const std::string&)> detail;
};

struct RunLoopResult {
  RunState state;
  Action last;  ///< the terminal action
  ExitCode code = ExitCode::kOk;
};

/// The small loop of STYLE rule 5: observe -> decide -> persist -> act, until a terminal action.
RunLoopResult run_gates(RunState state, const Observation& start, GateExecutor& executor,
                        const RunOutput& output);

}  // namespace bigmac::gates
