#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/exit_code.h"
#include "gates/run_state.h"
#include "gates/run_transition.h"

namespace bigmac::gates {

/// `status [RUN_DIR]`: one line per gate with its status, attempts and note, then what to do
/// next (resume where it stopped, or the route back after a failure).
std::string format_status(const RunState& state, const std::string& run_dir);

/// `status --json`: the run state without the per-gate inputs.
nlohmann::json status_json(const RunState& state);

/// The line printed when the loop stops: "all 5 gates passed", "gate dp failed at check
/// loss_vs_baseline; route back to gate single", "interrupted during gate dp; resume continues".
std::string format_action(const Action& action);

/// `status [RUN_DIR] [--json]`: what to print and the exit code (2 when the run directory has no
/// readable state).
struct StatusOutput {
  ExitCode code = ExitCode::kOk;
  std::string text;
};
StatusOutput status_command(const std::string& run_dir, bool json);

}  // namespace bigmac::gates
