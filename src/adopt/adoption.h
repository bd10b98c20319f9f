#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/clock.h"
#include "proc/process_runner.h"

namespace bigmac::adopt {

/// `bigmac-bringup adopt [-o FILE] [--steps N] [--timeout S] [--keep] -- CMD ARGS...`.
struct AdoptOptions {
  std::vector<std::string> command;  ///< the user's command, as they run it on one GPU
  std::int64_t steps = 5;            ///< steps of the trial run
  double timeout_s = 600;            ///< the trial is stopped after this long
  std::string work_dir;  ///< where the trial's output goes; empty: a fresh temporary folder
  bool keep = false;     ///< keep the trial's output (else removed, whatever the outcome)
  /// Added to both trials' environment: what the launcher the command started with would have
  /// given the program (adopt_command fills it for `accelerate launch`).
  std::map<std::string, std::string> env;
};

/// What adopt found and wrote.
struct Adoption {
  std::string config_text;  ///< the commented configuration (config check accepts it)
  std::string report;       ///< what the trial showed, per gate what it can check and lacks
};

/// Runs the command once (one process, rank 0 of a world of one, the probe on, a few steps),
/// reads its output as the gates will, and drafts a configuration: the command with the seed,
/// step count, batch, lr, log file and config flags turned into placeholders, the log format
/// (or a `[logs.fields]` map), and values measured by the probe. Then runs every gate's checks
/// over the trial to say what each can check. Errors: an empty command (usage, exit 2); a
/// program that is not found or cannot start (infrastructure, exit 3); a command that exits or
/// is stopped before logging a step, or that prints no loss the tool can read (input, exit 2),
/// each naming what it printed last.
Expected<Adoption> adopt_command(const AdoptOptions& options, proc::ProcessRunner& runner,
                                 const launch::Clock& clock);

}  // namespace bigmac::adopt
