#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/clock.h"
#include "launch/rank_stacks.h"
#include "launch/watchdog.h"
#include "proc/rank_process.h"

namespace bigmac::launch {

/// How a gate's launch ended (elastic's WorkerState at the end of a run).
enum class RunStatus {
  kSucceeded,     ///< every process exited 0
  kFailed,        ///< a process exited non-zero or was killed by a signal it did not get from us
  kStalled,       ///< the watchdog stopped the run: a rank made no progress in time
  kNonFinite,     ///< the watchdog stopped the run: a non-finite loss
  kInterrupted,   ///< cancelled (Ctrl-C); the CLI exits 130
  kLaunchFailed,  ///< a process could not be started (missing binary, permission)
  kStoppedEarly,  ///< stopped on request: the gate's records already fail it for good
  /// Stopped at the step bound: a rank logged a step past the gate's count, so the program
  /// does not end there by itself (no step flag, or one that counts otherwise). A clean end.
  kBounded,
};

std::string_view run_status_name(RunStatus status);

/// A failure is data (elastic's ProcessFailure): which rank, which pid, how, and when.
struct ProcessFailure {
  int rank = 0;
  pid_t pid = 0;
  proc::ExitStatus status;
  std::string first_error_line;
  Clock::duration at{};  ///< since the launch started
  std::string node;      ///< where the rank ran, when the launcher said (srun, bigmac-rank-env)

  /// "rank 1 on n2 (pid 4242) exit code 3 after 2.1 s: RuntimeError: ..."
  std::string describe() const;
};

/// One rank at the end of the run.
struct RankOutcome {
  int rank = 0;
  pid_t pid = 0;
  std::optional<proc::ExitStatus> exit;  ///< empty when never started
  bool stopped_by_us = false;            ///< ended by our teardown (TERM/KILL), not by itself
  std::string first_error_line;          ///< from its stderr; empty when it printed none
  /// Its last stderr lines (launcher labels and prefixes stripped, launcher lines left out),
  /// oldest first: what a verdict quotes for a rank that exited non-zero.
  std::vector<std::string> error_lines;
  std::string node;          ///< the node it ran on, when known ("n2", this host's name)
  bool node_failed = false;  ///< Slurm reported its node failed (down) during the run
  bool rendezvous_done = false;
  std::optional<std::int64_t> last_step;
  /// How long it had been silent when the run was stopped (only ranks still running then):
  /// tells the rank that hung from those that blocked on it a moment later.
  std::optional<Clock::duration> silent_at_stop;
  std::optional<Clock::duration> first_output;  ///< spawn to first byte
  std::optional<Clock::duration> duration;      ///< spawn to exit
};

/// The result of running a LaunchPlan (elastic's RunResult).
struct RunResult {
  RunStatus status = RunStatus::kSucceeded;
  std::vector<RankOutcome> ranks;            ///< by rank
  std::vector<ProcessFailure> failures;      ///< in the order they happened
  std::optional<ProcessFailure> root_cause;  ///< the earliest failure
  std::vector<Stall> stalls;                 ///< the culprit first (rank_stacks.h: attach_stacks)
  /// Where each rank asked was when a stall or Ctrl-C stopped the run (the probe's stacks on
  /// request).
  std::vector<RankStack> stacks;
  /// kInterrupted: each asked rank's place, by rank ("rank 1: main thread at data.py:40 in
  /// load_batch; last collective all_reduce #5 of world (...)").
  std::vector<std::string> interrupted_at;
  std::optional<NonFiniteLoss> non_finite;
  std::string stop_reason;  ///< kStoppedEarly: why (RunOptions::stop_request's answer)
  std::optional<std::int64_t> bound_step;  ///< kBounded: the step past the bound that was seen
  std::optional<Error> launch_error;
  /// Nodes Slurm reported failed during the run, and the lines that said so.
  std::vector<std::string> failed_nodes;
  std::vector<std::string> node_failure_lines;
  /// What the teardown could not do (an scancel that failed): the job may still run.
  std::vector<std::string> cleanup_problems;
  pid_t process_group = 0;
  Clock::duration duration{};

  /// One paragraph: status, then the root cause / stalls / non-finite loss.
  std::string summary() const;
};

}  // namespace bigmac::launch
