#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gates/run_state.h"

namespace bigmac::gates {

/// `status [RUN_DIR]`: one line per gate with its status, attempts and note, then what to do
/// next (resume where it stopped, or the route back after a failure).
std::string format_status(const RunState& state, const std::string& run_dir);

/// `status --json`: the run state without the per-gate inputs.
nlohmann::json status_json(const RunState& state);

}  // namespace bigmac::gates
