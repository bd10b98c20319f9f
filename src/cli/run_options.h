#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attempt/run_context.h"
#include "cli/common_options.h"

namespace bigmac::cli {

/// Options of the commands that run or plan gates.
struct RunCommandOptions {
  CommonOptions common;
  std::string run_dir;       ///< --run-dir; empty: reports/<run-id> (resume/status: reports/latest)
  std::string from;          ///< --from GATE
  std::string until;         ///< --until GATE
  std::string baseline;      ///< --baseline FILE; empty: baselines/<config name>.json
  bool no_baseline = false;  ///< --no-baseline: no stored baseline; the first gate records one
  std::string stages;        ///< --stages DIR; empty: ./stages, else the installed one
  bool ci = false;           ///< --ci: no terminal animation, JUnit always written
  bool strict = false;       ///< --strict: every unobservable check fails its gate
  bool quiet = false;        ///< -q: the verdict alone
  bool verbose = false;      ///< -v: every check, transition and step milestone too
  std::string color = "auto";  ///< --color auto|always|never
};

struct Invocation {
  RunCommandOptions options;
  std::filesystem::path cwd;  ///< where the run started; relative paths in its config mean it
  /// What the run directory recorded, when it records an invocation: the configuration the
  /// run had before this command, to say what the command changes.
  std::optional<RunCommandOptions> recorded;
};

/// The options to run with, from those the run in `run_path` recorded: a -c in the request
/// restates the configuration (file and --set), a --set alone is layered after the recorded
/// ones (`resume R --set launch.master_port=P` keeps the run's file and faults). A recorded
/// invocation that cannot be read is an error naming it, never a silent fall-back to the
/// built-in configuration.
Expected<Invocation> with_recorded_invocation(RunCommandOptions options,
                                              const std::filesystem::path& run_path);

/// What a run records of `options` (as run::kInvocationFile, in the directory it started
/// from): the file paths absolute, so with_recorded_invocation reads them back from anywhere.
nlohmann::json invocation_record(const RunCommandOptions& options);

/// Every effective value that differs between two configurations, one `key: old -> new` line
/// each (`key = value (new)` / `(gone)` for keys only one has), changed and gone keys in key order,
/// then new ones.
std::vector<std::string> config_changes(const config::Config& before, const config::Config& after);

/// Loads the configuration the options name and everything a run needs beside it.
tl::expected<attempt::RunContext, Errors> make_run_context(const RunCommandOptions& options);

}  // namespace bigmac::cli
