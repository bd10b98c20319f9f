#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/run_result.h"

namespace bigmac::launch {

/// How one rank of an attempt ended, in the one shape every later phase reads: the gate checks
/// judge it, the verdict quotes it, `result.json` records it (report/attempt_result.h). Made
/// once per rank from the launch's RunResult by ending_of.
struct RankEnding {
  bool known = false;            ///< false: no process information (a log read by hand)
  std::optional<int> exit_code;  ///< set when it exited by itself
  std::string signal;            ///< "SIGKILL" when a signal ended it
  bool stalled = false;          ///< the watchdog stopped it for lack of progress
  std::string detail;            ///< launcher's words ("stopped after 60 s without progress")
  /// The orchestrator stopped it on purpose because the watchdog saw a non-finite loss (fail
  /// fast): its exit is a consequence that finite_loss judges, not a failure of its own.
  bool stopped_at_non_finite = false;
  /// Ended by the launch's teardown (or srun) because another rank failed: a consequence.
  bool stopped = false;
  /// Stopped by the orchestrator at the step bound (RunStatus::kBounded): every step the gate
  /// asked for was run, and the program would have gone on. A clean end.
  bool bounded = false;
  std::string node{};        ///< the node it ran on, when the launcher said
  bool node_failed = false;  ///< Slurm reported that node failed during the gate
  /// Its last stderr lines (prefixes stripped) when it exited non-zero by itself.
  std::vector<std::string> error_lines{};
  std::string first_error_line{};  ///< the line its stderr names as the error, when any
  double duration_s = 0;           ///< spawn to exit; 0 when unknown
  int rank = 0;

  bool clean() const {
    return known && !stalled && (bounded || (exit_code == 0 && signal.empty()));
  }
  std::string describe() const;  ///< "exit 0", "killed by SIGKILL", "stalled (...)"
};

/// The ending of `outcome`, one rank of `result`: its exit, and what the teardown, the
/// watchdog and the launcher said of it.
RankEnding ending_of(const RankOutcome& outcome, const RunResult& result);

}  // namespace bigmac::launch
