#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "config/config.h"
#include "core/error.h"
#include "gates/gate_catalog.h"
#include "logs/parser_options.h"
#include "run/run_state.h"

namespace bigmac::attempt {

/// Where a run's inputs come from besides its configuration (which the caller loads).
struct RunSources {
  std::string config_file;  ///< names the stored baseline; empty: the built-in demo
  std::string baseline;     ///< --baseline FILE; empty: baselines/<config name>-<devices>.json
  std::string stages;       ///< --stages DIR; empty: ./stages, else the installed one
  /// Compare with no stored baseline, even where one exists: the first gate records this
  /// run's own (`<run_dir>/baseline.json`) and the later gates compare with it.
  bool no_stored_baseline = false;
};

/// The baseline one gate attempt compares with, read once for the whole attempt.
struct Reference {
  std::filesystem::path path;
  baseline::Baseline baseline;
  std::string digest;  ///< of the file, for invalidating gates that compared against it

  /// The first samples/step the baseline recorded, if any.
  std::optional<std::int64_t> samples_per_step() const;
};

/// Everything a run needs, loaded and checked once before anything launches: the effective
/// configuration, the gates with their overrides, where the trainer and the baseline are.
struct RunContext {
  config::Config config;
  gates::GateCatalog catalog;
  std::filesystem::path trainer_binary;  ///< builtin: bigmac-train; command: argv[0]
  std::filesystem::path
      stored_baseline;          ///< baselines/<name>.json (may not exist yet); empty: none
  bool baseline_given = false;  ///< --baseline named it: it must exist
  std::string baseline_name;
  std::string config_digest;
  /// How every log of the run is read (`trainer.log_format`, `[logs.fields]` compiled): the
  /// live watch and, where an attempt left no records, the reports.
  logs::ParserOptions parser;

  std::string config_file;  ///< -c FILE as given; empty: the built-in demo

  /// What a baseline recorded from `plan`'s gate keeps beside its fingerprint: the CI's
  /// commit, the trainer's digest (its binary, and for a command trainer every file its argv
  /// names, such as the script) and the gate's effective settings.
  baseline::Recorded recorded(const gates::GatePlan& plan) const;

  /// The `--set key=value` options this run was given, in the form to pass them again.
  std::vector<std::string> command_line_settings() const;

  /// Loads the gate catalog for `config`, compiles its log parser options and finds the trainer
  /// and the stored baseline. A bad `[logs.fields]` regex, a stored baseline that exists but
  /// cannot be read, or one named by --baseline that does not exist, is bad input naming the
  /// file.
  static tl::expected<RunContext, Errors> create(config::Config config, const RunSources& sources);

  /// Where `gate`'s reference is: the stored baseline when it exists; else, for every gate
  /// after the first, the one this run recorded from its first gate (`<run_dir>/baseline.json`);
  /// else none (the first gate then records it).
  std::optional<std::filesystem::path> reference_path(const std::filesystem::path& run_dir,
                                                      const std::string& gate) const;

  /// The reference `gate` compares with, read and checked once; nullopt when there is none
  /// yet. A reference file that exists but cannot be read is an input error naming it, never
  /// "no baseline".
  Expected<std::optional<Reference>> load_reference(const std::filesystem::path& run_dir,
                                                    const std::string& gate) const;

  /// Every gate's inputs as they are now, for invalidating stale passes.
  tl::expected<std::map<std::string, gates::GateInputs>, Errors> inputs(
      const std::filesystem::path& run_dir) const;
};

/// `reports/` beside which run directories are made.
std::filesystem::path reports_root();

}  // namespace bigmac::attempt
