#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "logs/context_window.h"
#include "logs/log_stream.h"
#include "logs/parser_options.h"
#include "logs/record.h"

namespace bigmac::logs {

/// Everything one rank logged, by record type, in line order: the one per-rank holder from
/// parsing (live or from files) through gate checks and diagnosis to reports. One-off events
/// keep every occurrence (a duplicate `run` or `done` is evidence); the accessors give the
/// latest, since a restarted rank logs `run` again and the last one describes what ran.
/// Non-record lines are kept in a bounded ContextWindow.
struct RankLog {
  int rank = -1;                     ///< -1: a file whose lines name no rank
  std::vector<std::string> sources;  ///< files that held this rank's lines
  std::vector<RunRecord> runs;
  std::vector<PgReadyRecord> pg_ready;
  std::vector<BatchRecord> batches;
  std::vector<ModelRecord> models;
  std::vector<LayoutRecord> layouts;
  std::vector<StepRecord> steps;
  std::vector<HeartbeatRecord> heartbeats;
  std::vector<MicroBatchRecord> micro_batches;
  std::vector<ShapeRecord> shapes;
  std::vector<LossRecord> losses;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<DigestRecord> digests;
  std::vector<DoneRecord> dones;
  std::vector<EvalRecord> evals;
  std::vector<LoadRecord> loads;              ///< files torch.load read (the probe's)
  std::vector<CollectiveRecord> collectives;  ///< the probe's collective ledger, in issue order
  /// This rank's own digests by step (the probe's step events, a trainer's `digest` events),
  /// whoever owns the run's step series: what replicas_in_sync and no_duplicate_samples
  /// compare across ranks.
  struct StepDigests {
    std::int64_t step = 0;
    std::optional<std::uint64_t> input;  ///< the step's first micro-batch
    std::optional<std::uint64_t> param;  ///< the parameters after the update
    RecordOrigin at;
    /// The samples this rank consumed in the step (DigestRecord): how many, and their sum hash.
    std::optional<std::int64_t> sample_count{};
    std::optional<std::uint64_t> sample_digest{};
    std::vector<std::uint64_t> sample_hashes{};  ///< each sample's hash, when logged
    /// The buffers (BatchNorm statistics) as the step's first forward read them.
    std::optional<std::uint64_t> buffers{};
  };
  std::vector<StepDigests> step_digests;
  std::vector<SettingsRecord> settings;  ///< `[cfg]` lines
  ContextWindow context;
  std::int64_t records = 0;  ///< typed records added
  /// The probe ran in this rank and saw it train (its log has a `run`): what it did not see
  /// (no `pg_ready`: init_process_group never called) did not happen.
  bool probe_ran = false;
  std::int64_t unparseable = 0;  ///< record-looking lines of this rank that could not be read
  /// Where each field's values came from when the probe ran beside the trainer
  /// (logs/probe_merge.h): "loss" -> "trainer", "grad_norm" -> "probe", ... Empty: no probe.
  std::map<std::string, std::string> field_sources;

  void add(Record record);

  const RunRecord* run() const { return latest(runs); }
  const BatchRecord* batch() const { return latest(batches); }
  const ModelRecord* model() const { return latest(models); }
  const LayoutRecord* layout() const { return latest(layouts); }
  const DigestRecord* digest() const { return latest(digests); }
  const DoneRecord* done() const { return latest(dones); }
  const SettingsRecord* last_settings() const { return latest(settings); }

  /// Every record of type R this rank logged, in line order.
  template <class R>
  const std::vector<R>& all() const;

  /// The name evidence cites for this rank's lines: its first source, or "" when none.
  const std::string& label() const;

  /// The typed records again as one list, for summaries that take records (baselines).
  std::vector<Record> typed_records() const;

 private:
  template <class R>
  static const R* latest(const std::vector<R>& v) {
    return v.empty() ? nullptr : &v.back();
  }
};

template <class R>
const std::vector<R>& RankLog::all() const {
  if constexpr (std::is_same_v<R, RunRecord>)
    return runs;
  else if constexpr (std::is_same_v<R, PgReadyRecord>)
    return pg_ready;
  else if constexpr (std::is_same_v<R, BatchRecord>)
    return batches;
  else if constexpr (std::is_same_v<R, ModelRecord>)
    return models;
  else if constexpr (std::is_same_v<R, LayoutRecord>)
    return layouts;
  else if constexpr (std::is_same_v<R, StepRecord>)
    return steps;
  else if constexpr (std::is_same_v<R, HeartbeatRecord>)
    return heartbeats;
  else if constexpr (std::is_same_v<R, MicroBatchRecord>)
    return micro_batches;
  else if constexpr (std::is_same_v<R, ShapeRecord>)
    return shapes;
  else if constexpr (std::is_same_v<R, LossRecord>)
    return losses;
  else if constexpr (std::is_same_v<R, CheckpointRecord>)
    return checkpoints;
  else if constexpr (std::is_same_v<R, DigestRecord>)
    return digests;
  else if constexpr (std::is_same_v<R, EvalRecord>)
    return evals;
  else if constexpr (std::is_same_v<R, LoadRecord>)
    return loads;
  else if constexpr (std::is_same_v<R, CollectiveRecord>)
    return collectives;
  else if constexpr (std::is_same_v<R, SettingsRecord>)
    return settings;
  else {
    static_assert(std::is_same_v<R, DoneRecord>, "RankLog::all<R>: R is not a typed record");
    return dones;
  }
}

/// One rank's log from records already read, all named `source`: the rank is the first
/// record's (-1 when none names one). For tests and callers that hold records in memory.
RankLog rank_log_of(std::string source, const std::vector<Record>& records);

/// One file as read.
struct LogFile {
  std::string path;
  StreamStats stats;
};

/// Logs read from one or more files, merged by rank (ascending; rank -1 last, one per file).
struct LoadedLogs {
  std::vector<RankLog> ranks;
  std::vector<LogFile> files;

  const RankLog* find(int rank) const;
};

/// The rank a file name suggests (`rank3.log`, `rank_3.jsonl`, `stdout-rank-12`), else -1.
/// It is the default for lines that carry no rank of their own.
int rank_from_path(const std::string& path);

/// Reads one file in chunks through a LogStream (`default_rank` for lines that name none) and
/// hands each batch of records to `take`, which may move them out. Returns the stream's stats;
/// an unreadable file (also a directory) is an input Error naming it.
Expected<StreamStats> stream_log_file(const std::string& path, const ParserOptions& options,
                                      int default_rank,
                                      const std::function<void(std::vector<Record>&)>& take);

/// Reads each file with stream_log_file (the rank its name suggests as the default) and merges
/// the records by rank.
Expected<LoadedLogs> load_logs(const std::vector<std::string>& paths,
                               const ParserOptions& options = {});

/// The same for text already in memory (tests, the watchdog's buffers), as source `name`.
LoadedLogs load_text(std::string_view text, const std::string& name,
                     const ParserOptions& options = {}, int default_rank = -1);

}  // namespace bigmac::logs
