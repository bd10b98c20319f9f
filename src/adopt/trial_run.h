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

/// How `adopt` runs the user's command in a trial: `nproc` processes on this host, each as
/// torchrun would start it (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE set per process).
struct TrialSpec {
  /// The command; `{rank}` in a word is replaced by each process's rank (its log file).
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  ///< on top of this process's environment, for all
  std::filesystem::path work_dir;          ///< the processes' stdout and stderr files go here
  int nproc = 1;
  std::filesystem::path log_file;   ///< the trainer's own log file (`{rank}` in it); empty: none
  std::filesystem::path probe_log;  ///< the probe's files (`{rank}` in it); empty: probe off
  /// Steps after which the processes are stopped: a command that logs steps past the probe's
  /// bound (no probe in it, or an optimizer the probe does not see).
  std::int64_t stop_after_steps = 3;
  std::chrono::milliseconds timeout{600000};
};

/// One process of the trial.
struct TrialRank {
  int rank = 0;
  proc::ExitStatus exit;
  bool exited = false;  ///< ended by itself (else we stopped it)
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
  std::filesystem::path log_file;   ///< its own log file, when the command takes one
  std::filesystem::path probe_log;  ///< its probe file, when the probe is on
};

/// What the trial run did.
struct TrialRun {
  proc::ExitStatus exit;     ///< rank 0's, or the first failure's
  bool exited = false;       ///< every process ended by itself (else we stopped them)
  bool stopped = false;      ///< stopped by us after stop_after_steps steps
  bool timed_out = false;    ///< stopped by us at the timeout
  double seconds = 0;        ///< from start to the end of the last process
  double first_step_s = -1;  ///< when the first step was logged; -1: none
  /// The longest silence after the first step: between two outputs, or from the last one to
  /// the processes' end (leaving the process group and the interpreter can take seconds).
  double longest_silence_s = 0;
  std::int64_t steps_seen = 0;        ///< the most steps any of its outputs logged
  std::filesystem::path stdout_path;  ///< rank 0's
  std::filesystem::path stderr_path;  ///< rank 0's
  std::vector<TrialRank> ranks;       ///< by rank
};

/// A path with `{rank}` replaced by `rank`.
std::filesystem::path for_rank(const std::filesystem::path& pattern, int rank);

/// Runs the trial in `runner` and watches every process's stdout, stderr, log file and probe
/// log as they grow, counting steps (any format `auto` reads, or a line that carries a loss).
/// Stops the process group (TERM, then KILL) after `stop_after_steps` steps, when a process
/// fails while others still run, or at the timeout; never leaves a process behind. The error
/// is a failure to start the command (missing program: infrastructure).
Expected<TrialRun> run_trial(const TrialSpec& spec, proc::ProcessRunner& runner,
                             const launch::Clock& clock);

}  // namespace bigmac::adopt
