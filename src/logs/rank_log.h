#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "logs/context_window.h"
#include "logs/log_stream.h"
#include "logs/record.h"

namespace bigmac::logs {

/// Everything one rank logged, by record type, in line order. One-off events keep the latest
/// (a restarted rank logs `run` again; the last one describes what ran).
struct RankLog {
  int rank = -1;                     ///< -1: a file whose lines name no rank
  std::vector<std::string> sources;  ///< files that held this rank's lines
  std::optional<RunRecord> run;
  std::optional<PgReadyRecord> pg_ready;
  std::optional<BatchRecord> batch;
  std::optional<ModelRecord> model;
  std::optional<LayoutRecord> layout;
  std::vector<StepRecord> steps;
  std::vector<HeartbeatRecord> heartbeats;
  std::vector<MicroBatchRecord> micro_batches;
  std::vector<ShapeRecord> shapes;
  std::vector<LossRecord> losses;
  std::vector<CheckpointRecord> checkpoints;
  std::optional<DigestRecord> digest;
  std::optional<DoneRecord> done;
  ContextWindow context;
  std::int64_t records = 0;      ///< typed records added
  std::int64_t unparseable = 0;  ///< record-looking lines of this rank that could not be read

  void add(Record record);
};

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

/// Reads each file in chunks through a LogStream and merges the records by rank. An unreadable
/// file is an input Error naming it.
Expected<LoadedLogs> load_logs(const std::vector<std::string>& paths,
                               LogFormat format = LogFormat::kAuto,
                               const FieldMap* custom = nullptr);

/// The same for text already in memory (tests, the watchdog's buffers), as source `name`.
LoadedLogs load_text(std::string_view text, const std::string& name,
                     LogFormat format = LogFormat::kAuto, int default_rank = -1,
                     const FieldMap* custom = nullptr);

}  // namespace bigmac::logs
