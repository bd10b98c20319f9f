#pragma once

#include <optional>
#include <string>
#include <vector>

#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::gates {

/// How a rank process ended, as the launcher saw it.
struct RankEnding {
  bool known = false;            ///< false: no process information (a log read by hand)
  std::optional<int> exit_code;  ///< set when it exited
  std::string signal;            ///< "SIGKILL" when a signal ended it
  bool stalled = false;          ///< the watchdog stopped it for lack of progress
  std::string detail;            ///< launcher's words ("stopped after 60 s without progress")
  /// The orchestrator stopped it on purpose because the watchdog saw a non-finite loss (fail
  /// fast): its exit is a consequence that finite_loss judges, not a failure of its own.
  bool stopped_at_non_finite = false;
  /// Ended by the launch's teardown (or srun) because another rank failed: a consequence.
  bool stopped = false;
  std::string node{};        ///< the node it ran on, when the launcher said
  bool node_failed = false;  ///< Slurm reported that node failed during the gate
  /// Its last stderr lines (prefixes stripped) when it exited non-zero by itself.
  std::vector<std::string> error_lines{};

  bool clean() const { return known && exit_code == 0 && signal.empty() && !stalled; }
  std::string describe() const;  ///< "exit 0", "killed by SIGKILL", "stalled (...)"
};

/// One rank as a gate judges it: everything it logged (the one per-rank record holder,
/// logs::RankLog) and how its process ended.
struct RankEvidence : logs::RankLog {
  RankEnding exit;
};

/// The input of a gate evaluation: one entry per rank, in rank order.
struct GateEvidence {
  std::vector<RankEvidence> ranks;
  /// All records of one rank's log and its exit.
  void add_rank(int rank, const std::vector<logs::Record>& records, RankEnding exit);
  /// One rank as it was read (live by the launcher, or by logs::load_logs) and its exit; an
  /// unknown rank (-1) counts as rank 0.
  void add_rank_log(logs::RankLog log, RankEnding exit);
  /// Records of a combined log, grouped by their rank (unknown rank -> 0); exits unknown.
  static GateEvidence from_combined(const std::vector<logs::Record>& records);
  /// All records of all ranks in rank order, for baseline summaries.
  std::vector<logs::Record> all_records() const;
  /// The rank whose step series is the run's (baseline::series_owner), or nullptr.
  const RankEvidence* step_owner() const;
};

}  // namespace bigmac::gates
