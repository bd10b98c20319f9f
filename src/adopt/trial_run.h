#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/clock.h"
#include "proc/process_runner.h"

namespace bigmac::adopt {

/// How `adopt` runs the user's command once: one process, as rank 0 of a world of one.
struct TrialSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  ///< on top of this process's environment
  std::filesystem::path work_dir;          ///< stdout.log and stderr.log go here
  std::filesystem::path log_file;          ///< the trainer's own log file; empty: none
  std::filesystem::path probe_log;         ///< the probe's rank-0 file; empty: probe off
  /// Steps after which the process is stopped: the command takes no step count of its own, or
  /// runs past the one it was given.
  std::int64_t stop_after_steps = 3;
  std::chrono::milliseconds timeout{600000};
};

/// What the trial run did.
struct TrialRun {
  proc::ExitStatus exit;
  bool exited = false;       ///< ended by itself (else we stopped it)
  bool stopped = false;      ///< stopped by us after stop_after_steps steps
  bool timed_out = false;    ///< stopped by us at the timeout
  double seconds = 0;        ///< from start to the end of the process
  double first_step_s = -1;  ///< when the first step was logged; -1: none
  /// The longest silence after the first step: between two outputs, or from the last one to
  /// the process's end (leaving the process group and the interpreter can take seconds).
  double longest_silence_s = 0;
  std::int64_t steps_seen = 0;  ///< the most steps any of its outputs logged
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
};

/// Runs the trial in `runner` and watches stdout, stderr, the log file and the probe log as
/// they grow, counting steps (any format `auto` reads, or a line that carries a loss). Stops the
/// process group (TERM, then KILL) after `stop_after_steps` steps or at the timeout; never leaves
/// a process behind. The error is a failure to start the command (missing program: infrastructure).
Expected<TrialRun> run_trial(const TrialSpec& spec, proc::ProcessRunner& runner,
                             const launch::Clock& clock);

}  // namespace bigmac::adopt
