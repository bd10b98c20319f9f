#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/exit_code.h"
#include "run/run_state.h"

namespace bigmac::run {

// Observations: what the loop saw.

/// Start gates `first`..`last` (ids, inclusive; empty = from the first / to the last gate).
/// `inputs` are every gate's inputs as they are now, to invalidate stale passes.
/// `not_applicable`: the gates the target layout has nothing for (id -> why), as the
/// configuration says now.
struct Begin {
  std::string first;
  std::string last;
  std::map<std::string, gates::GateInputs> inputs;
  std::map<std::string, std::string> not_applicable;
};
/// Continue the stored selection from the failed, interrupted or invalidated gate.
struct Resume {
  std::map<std::string, gates::GateInputs> inputs;
  std::map<std::string, std::string> not_applicable;
};
/// A launched gate ended with a verdict.
struct GateFinished {
  std::string gate;
  bool passed = false;
  std::string summary;
  std::string failed_check;
  std::string route_back;
  gates::GateInputs inputs;  ///< what it ran with
};
/// The gate could not run (missing binary, port, permission): infrastructure, exit 3.
struct GateAborted {
  std::string gate;
  std::string message;
};
/// Ctrl-C / SIGTERM while a gate ran: ranks stopped, resume continues here.
struct Interrupted {};
/// Something a passed gate depends on changed (a baseline re-recorded, ...).
struct Invalidate {
  std::string gate;
  std::string reason;
};

using Observation = std::variant<Begin, Resume, GateFinished, GateAborted, Interrupted, Invalidate>;

// Actions: what the loop must do next.

struct LaunchGate {
  std::string gate;
};
struct StopWithFailure {
  std::string gate;
  std::string check;
  std::string route_back;
  std::string summary;
};
struct StopInterrupted {
  std::string gate;
};
struct StopWithError {
  std::string gate;
  std::string message;
};
/// The request cannot start: prerequisites not passed, unknown gate. Bad input (exit 2).
struct Refuse {
  std::string message;
};
struct Finish {
  std::string summary;
};
/// Nothing to do (an Invalidate outside a launch).
struct Continue {};

using Action = std::variant<LaunchGate, StopWithFailure, StopInterrupted, StopWithError, Refuse,
                            Finish, Continue>;

/// The state after an observation and what to do next; `log` has one line per transition for
/// the terminal ("dp: passed -> invalidated (train.seed changed 1234 -> 7)").
struct Decision {
  RunState state;
  Action action;
  std::vector<std::string> log;
};

/// "--from X comes after --until Y" when gate `first` comes after gate `last` among `ids` (the
/// gates in order; an empty or unknown id is no order problem), else nullopt. The one order
/// check: run-all asks it before the run directory is touched, decide() on every Begin.
std::optional<std::string> selection_out_of_order(const std::vector<std::string>& ids,
                                                  const std::string& first,
                                                  const std::string& last);

/// The state machine (STYLE.md rule 5): pure, no I/O.
Decision decide(const RunState& state, const Observation& observation);

/// The exit code a terminal action ends the process with (Continue/LaunchGate: kOk).
ExitCode exit_code_of(const Action& action);

}  // namespace bigmac::run
