#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "launch/clock.h"
#include "launch/launch_plan.h"
#include "launch/run_result.h"
#include "launch/watchdog.h"
#include "logs/field_map.h"
#include "logs/log_format.h"
#include "logs/record.h"
#include "proc/process_runner.h"

namespace bigmac::launch {

/// How execute_plan watches and stops a launch.
struct RunOptions {
  WatchdogLimits limits;
  /// Longest wait between two looks at the watchdog and the cancel flag. The loop also wakes at
  /// the watchdog's next deadline, so a stall is seen at its limit, not a poll interval later.
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds term_grace{5000};  ///< SIGTERM to SIGKILL
  /// Set from a SIGINT handler by the CLI; the run is torn down and ends kInterrupted.
  const std::atomic<bool>* cancel = nullptr;
  logs::LogFormat format = logs::LogFormat::kAuto;
  const logs::FieldMap* fields = nullptr;  ///< for LogFormat::kRegex
  /// Where the process group and pids are recorded once started, so that preflight of a later
  /// run of this run directory finds leftovers. Empty: not recorded.
  std::filesystem::path process_record;
  /// Also follow each rank's own log file (RankAssignment::log_path, the trainer's
  /// `--log-file`), since a trainer may write its events there rather than to stdout.
  bool follow_log_files = true;
  /// Asked, while ranks run, whether the records so far already decide the gate (a baseline
  /// comparison that failed for good): a reason stops the run like a stall, with status
  /// kStoppedEarly. It is asked after new `step` or `batch` records, and at most as often as
  /// keeps its own cost under a tenth of the time (it reads every record so far).
  std::function<std::optional<std::string>()> stop_request;
  /// The step bound: once a rank logs a step numbered this or higher, the ranks are stopped
  /// (status kBounded, a clean end): the program would not end at the gate's count itself.
  std::optional<std::int64_t> stop_at_step;
  /// Count only the probe's steps for stop_at_step: a trainer's own lines may number other
  /// things too (evaluations, closure calls) and never stop a run the probe bounds.
  bool bound_by_probe = false;
  /// Called at every look of the loop (at most poll_interval apart while ranks run) with the rank
  /// nearest its silence limit, so a status line can run its clock and show the silence.
  std::function<void(const std::optional<Watchdog::Quietest>&)> on_poll;
  /// At a stall, how long to wait for the ranks' stacks (the probe's, docs/probe.md) after
  /// asking for them, before teardown; 0: not asked.
  std::chrono::milliseconds stacks_wait{2000};
};

/// Where a record was read: a process's stdout or stderr, the rank's own log file, or the
/// probe's log of the rank (docs/probe.md).
enum class RecordSource { kStdout, kStderr, kLogFile, kProbe };

/// RunOptions with the limits of `[launch]` (init_timeout_s, stall_timeout_s, stall_min_s,
/// stall_factor); the rest default.
RunOptions run_options_for(const config::LaunchConfig& launch);

/// Receives every record of every rank as it is parsed (the rank is in the record's origin).
using RecordSink = std::function<void(const logs::Record& record, RecordSource source)>;

/// Runs `plan` to completion under the watchdog: starts every process, streams output to the
/// log parser, stops the whole group at the first failure, stall, non-finite loss or cancel
/// (SIGTERM, `term_grace`, SIGKILL) and reports per-rank outcomes with the root cause.
/// Nothing is left running when it returns.
RunResult execute_plan(const LaunchPlan& plan, proc::ProcessRunner& runner, const Clock& clock,
                       const RunOptions& options, const RecordSink& on_record = {});

/// The watchdog's view of a record of `rank` logged at `time`.
ProgressEvent observation_of(const logs::Record& record, int rank, Clock::time_point time);

}  // namespace bigmac::launch
