#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/rank_ending.h"
#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::gates {

/// How a rank process ended: the launch's one shape of it (launch/rank_ending.h).
using launch::RankEnding;

/// One rank as a gate judges it: everything it logged (the one per-rank record holder,
/// logs::RankLog) and how its process ended.
struct RankEvidence : logs::RankLog {
  RankEnding exit;
};

/// The input of a gate evaluation: one entry per rank, in rank order.
struct GateEvidence {
  std::vector<RankEvidence> ranks;
  /// Checkpoints earlier gate attempts of this run wrote (their `ckpt` paths), with who wrote
  /// them ("gate single, attempt 1, step 15"): a gate that loads one did not start fresh.
  std::map<std::string, std::string> earlier_checkpoints;
  /// The rank whose own numbers are the run's when several ranks log steps (trainer.loss_rank);
  /// a rank the gate's world lacks, or one that logged no step, leaves it to the lowest.
  int loss_rank = 0;
  /// All records of one rank's log and its exit.
  void add_rank(int rank, const std::vector<logs::Record>& records, RankEnding exit);
  /// One rank as it was read (live by the launcher, or by logs::load_logs) and its exit; an
  /// unknown rank (-1) counts as rank 0.
  void add_rank_log(logs::RankLog log, RankEnding exit);
  /// Records of a combined log, grouped by their rank (unknown rank -> 0); exits unknown.
  static GateEvidence from_combined(const std::vector<logs::Record>& records);
  /// The records of all ranks in rank order that a baseline summary reads: runs, batches, models,
  /// steps, layouts, and each step's sample set as a `digest`.
  std::vector<logs::Record> all_records() const;
  /// The rank whose step series is the run's (baseline::series_owner), or nullptr.
  const RankEvidence* owner() const;
};

}  // namespace bigmac::gates
