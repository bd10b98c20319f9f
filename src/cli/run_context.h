#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "baseline/baseline.h"
#include "cli/common_options.h"
#include "gates/gate_catalog.h"
#include "gates/gate_plan.h"
#include "gates/run_state.h"

namespace bigmac::cli {

/// Options of the commands that run or plan gates.
struct RunCommandOptions {
  CommonOptions common;
  std::string run_dir;   ///< --run-dir; empty: reports/<run-id> (resume/status: reports/latest)
  std::string from;      ///< --from GATE
  std::string until;     ///< --until GATE
  std::string baseline;  ///< --baseline FILE; empty: baselines/<config name>.json
  std::string stages;    ///< --stages DIR; empty: ./stages, else the installed one
  bool ci = false;       ///< --ci: no terminal animation, JUnit always written
};

/// Everything a run needs, loaded and checked once before anything launches: the effective
/// configuration, the gates with their overrides, where the trainer and the baseline are, and
/// every gate's concrete plan (a plan error is bad input, exit 2, before any process starts).
struct RunContext {
  config::Config config;
  gates::GateCatalog catalog;
  std::filesystem::path trainer_binary;  ///< builtin: bigmac-train; command: argv[0]
  std::filesystem::path stored_baseline;  ///< baselines/<name>.json (may not exist yet)
  std::string baseline_name;
  std::string config_digest;

  static tl::expected<RunContext, Errors> create(const RunCommandOptions& options);

  /// The reference `gate` is compared with: the stored baseline when it exists; else, for every
  /// gate after the first, the one this run recorded from its first gate
  /// (`<run_dir>/baseline.json`); else none (the first gate then records it).
  std::optional<std::filesystem::path> reference_path(const std::filesystem::path& run_dir,
                                                      const std::string& gate) const;
  std::optional<baseline::Baseline> reference(const std::filesystem::path& run_dir,
                                              const std::string& gate) const;

  /// Plans one gate against the current reference.
  Expected<gates::GatePlan> plan(const gates::GateSpec& spec,
                                 const std::filesystem::path& run_dir) const;

  /// Every gate's inputs as they are now, for invalidating stale passes.
  tl::expected<std::map<std::string, gates::GateInputs>, Errors> inputs(
      const std::filesystem::path& run_dir) const;
};

/// `reports/` beside which run directories are made.
std::filesystem::path reports_root();

}  // namespace bigmac::cli
