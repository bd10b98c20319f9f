#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gates/gate_inputs.h"

namespace bigmac::run {

/// Where one gate stands in a run.
enum class GateStatus {
  kPending,  ///< not run yet
  kRunning,  ///< launched; still running, or the orchestrator died while it ran
  kPassed,
  kFailed,
  kSkipped,      ///< outside --from/--until
  kInvalidated,  ///< passed once, but what it depends on changed; runs again
  kInterrupted,  ///< Ctrl-C / SIGTERM stopped its ranks; resume runs it again
  kAborted,      ///< could not be launched (infrastructure); resume runs it again
  /// The target layout has nothing for it to check (pp2 without pipeline stages): never run,
  /// never failed; `note` says why. Decided anew at every start and resume.
  kNotApplicable,
};

/// Where the run as a whole stands: derived from its gates (RunState::phase), never stored.
enum class RunPhase {
  kReady,  ///< created, nothing launched
  kRunning,
  kPassed,          ///< every selected gate passed
  kFailed,          ///< a gate failed; its verdict was printed
  kInterrupted,     ///< Ctrl-C / SIGTERM; resume continues
  kInfrastructure,  ///< a gate could not be launched
};

std::string_view status_name(GateStatus status);
std::string_view phase_name(RunPhase phase);

/// One gate's row in the run state.
struct GateRecord {
  std::string id;
  GateStatus status = GateStatus::kPending;
  int attempts = 0;
  std::string note;          ///< last verdict summary, invalidation or interruption reason
  std::string failed_check;  ///< on kFailed
  std::string route_back;    ///< on kFailed
  gates::GateInputs inputs;  ///< what its last attempt ran with
};

/// A run: every gate of the engine in order and the selected range. Persisted as
/// reports/<run-id>/state.json after every transition.
struct RunState {
  std::string run_id;
  std::vector<GateRecord> gates;
  std::size_t first = 0;  ///< selected range, inclusive indices into `gates`
  std::size_t last = 0;
  std::string current;               ///< the gate launched last
  std::string message;               ///< why the run stopped
  std::vector<std::string> history;  ///< one line per transition, oldest first

  /// A fresh run over `gate_ids` (in order), all pending, everything selected.
  static RunState fresh(std::string run_id, const std::vector<std::string>& gate_ids);
  GateRecord* find(std::string_view id);
  const GateRecord* find(std::string_view id) const;
  std::ptrdiff_t index_of(std::string_view id) const;  ///< -1 when unknown

  /// The run's phase from its gates: running while a gate runs; else, within the selection,
  /// interrupted, infrastructure (a gate could not run) or failed when a gate is so; passed
  /// when every selected gate passed or does not apply; ready otherwise.
  RunPhase phase() const;
};

nlohmann::json to_json(const RunState& state);
Expected<RunState> run_state_from_json(const nlohmann::json& json, const std::string& path);

}  // namespace bigmac::run
