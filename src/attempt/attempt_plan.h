#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attempt/run_context.h"
#include "core/error.h"
#include "gates/gate_plan.h"
#include "gates/gate_spec.h"
#include "launch/launch_plan.h"

namespace bigmac::attempt {

/// Phase 1 of a gate attempt (docs/architecture.md §3): one gate made concrete, down to every
/// rank's argv and environment. `plan` prints it; `run` writes and launches it.
struct AttemptPlan {
  const gates::GateSpec* spec = nullptr;
  std::size_t index = 0;              ///< the gate's position in the catalog (0-based)
  std::size_t total = 0;              ///< gates in the catalog
  std::vector<std::string> gate_ids;  ///< every gate of the catalog, in order
  int attempt = 1;
  std::filesystem::path dir;        ///< the attempt folder (`02-dp.1`)
  gates::GatePlan gate;             ///< the gate's effective configuration
  std::filesystem::path gate_file;  ///< gate.toml, or gate.yaml for a trainer that reads YAML
  std::string gate_file_text;       ///< what gate_file holds
  launch::LaunchPlan launch;        ///< every rank's process, argv and environment
  logs::ParserOptions parser;       ///< how the ranks' logs are read: the run's (RunContext)
};

/// Plans attempt `attempt` of `spec` in `run_dir` against `reference` (nullptr: none yet, the
/// single-process samples/step is then the reference). `visible_devices` are the CUDA devices
/// the ranks may use (ignored on CPU). Errors are bad input: a value that cannot be conserved,
/// a launch that cannot be planned. `master_port` > 0 replaces launch.master_port (the port
/// claimed for this attempt when the configured one was taken, launch/master_port.h).
Expected<AttemptPlan> plan_attempt(const RunContext& context, const gates::GateSpec& spec,
                                   const Reference* reference, const std::filesystem::path& run_dir,
                                   int attempt, const std::vector<std::string>& visible_devices,
                                   int master_port = 0);

/// Writes what the ranks are started from into the attempt folder: the gate file and
/// launch-plan.json, in a new attempt folder (run::create_attempt_folder: one left by an
/// attempt the run no longer records is moved aside, and the returned note says so; empty
/// otherwise). The error names the file that could not be written.
Expected<std::string> write_attempt_plan(const AttemptPlan& plan);

/// `plan`'s text for one gate: the batch arithmetic and layout, the launcher and the first
/// process's argv; `verbose` gives every rank's launch instead (argv, environment, files).
std::string format_attempt_plan(const AttemptPlan& plan, bool verbose = false);

/// `plan` as JSON (`plan --json`): the gate's layout and batch arithmetic, the values it reads,
/// and the launch (launch::to_json).
nlohmann::json attempt_plan_json(const AttemptPlan& plan);

}  // namespace bigmac::attempt
