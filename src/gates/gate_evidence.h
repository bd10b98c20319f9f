#pragma once

#include <optional>
#include <string>
#include <vector>

#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::gates {

/// How a rank process ended, as the launcher saw it.
struct RankExit {
  bool known = false;            ///< false: no process information (a log read by hand)
  std::optional<int> exit_code;  ///< set when it exited
  std::string signal;            ///< "SIGKILL" when a signal ended it
  bool stalled = false;          ///< the watchdog stopped it for lack of progress
  std::string detail;            ///< launcher's words ("stopped after 60 s without progress")
  /// The orchestrator stopped it on purpose because the watchdog saw a non-finite loss (fail
  /// fast): its exit is a consequence that finite_loss judges, not a failure of its own.
  bool stopped_at_non_finite = false;

  bool clean() const { return known && exit_code == 0 && signal.empty() && !stalled; }
  std::string describe() const;  ///< "exit 0", "killed by SIGKILL", "stalled (...)"
};

/// Everything one rank logged, split by event, plus how it ended.
struct RankEvidence {
  int rank = -1;
  RankExit exit;
  std::vector<logs::RunRecord> runs;
  std::vector<logs::PgReadyRecord> pg_ready;
  std::vector<logs::BatchRecord> batches;
  std::vector<logs::ModelRecord> models;
  std::vector<logs::LayoutRecord> layouts;
  std::vector<logs::StepRecord> steps;
  std::vector<logs::HeartbeatRecord> heartbeats;
  std::vector<logs::MicroBatchRecord> micro_batches;
  std::vector<logs::ShapeRecord> shapes;
  std::vector<logs::LossRecord> losses;
  std::vector<logs::CheckpointRecord> checkpoints;
  std::vector<logs::DigestRecord> digests;
  std::vector<logs::DoneRecord> dones;
  std::vector<logs::TextLine> text;

  void add(const logs::Record& record);
};

/// The input of a gate evaluation: one entry per rank, in rank order.
struct GateEvidence {
  std::vector<RankEvidence> ranks;
  /// All records of one rank's log (as the launcher collected them) and its exit.
  void add_rank(int rank, const std::vector<logs::Record>& records, RankExit exit);
  /// One rank as logs::load_logs merged it (one-off events are kept once there, so a
  /// duplicate `run` or `done` is not seen; the per-step vectors are complete).
  void add_rank_log(const logs::RankLog& log, RankExit exit);
  /// Records of a combined log, grouped by their rank (unknown rank -> 0); exits unknown.
  static GateEvidence from_combined(const std::vector<logs::Record>& records);
  /// All records of all ranks in rank order, for baseline summaries.
  std::vector<logs::Record> all_records() const;
  /// The rank that logged steps first (the loss owner), or nullptr.
  const RankEvidence* step_owner() const;
};

}  // namespace bigmac::gates
