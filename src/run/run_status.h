#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/exit_code.h"
#include "run/run_state.h"
#include "run/run_transition.h"

namespace bigmac::run {

/// `status [RUN_DIR]`: one line per gate with its status, attempts and note, then what to do
/// next (resume where it stopped, or the route back after a failure). `holder` is the pid of
/// the orchestrator that holds the run now (lock_holder), nullopt when none does: a gate left
/// `running` without one was stopped by a killed orchestrator.
std::string format_status(const RunState& state, const std::string& run_dir,
                          std::optional<long> holder = std::nullopt);

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

}  // namespace bigmac::run
