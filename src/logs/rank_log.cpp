#include "logs/rank_log.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "core/input_file.h"
#include "logs/read_buffer.h"

namespace bigmac::logs {

namespace {

struct Adder {
  RankLog& log;
  void operator()(RunRecord&& r) { log.runs.push_back(std::move(r)); }
  void operator()(PgReadyRecord&& r) { log.pg_ready.push_back(std::move(r)); }
  void operator()(BatchRecord&& r) { log.batches.push_back(std::move(r)); }
  void operator()(ModelRecord&& r) { log.models.push_back(std::move(r)); }
  void operator()(LayoutRecord&& r) { log.layouts.push_back(std::move(r)); }
  void operator()(StepRecord&& r) { log.steps.push_back(std::move(r)); }
  void operator()(HeartbeatRecord&& r) { log.heartbeats.push_back(r); }
  void operator()(MicroBatchRecord&& r) { log.micro_batches.push_back(r); }
  void operator()(ShapeRecord&& r) { log.shapes.push_back(std::move(r)); }
  void operator()(LossRecord&& r) { log.losses.push_back(r); }
  void operator()(CheckpointRecord&& r) { log.checkpoints.push_back(std::move(r)); }
  void operator()(DigestRecord&& r) {
    // A trainer's own per-step digests (bigmac-train) join the probe's: the same invariants.
    if (r.params || r.input_digest || r.sample_count || r.buffer_digest) {
      auto& d = log.step_digests;
      if (d.empty() || d.back().step != r.global_step)
        d.push_back({r.global_step, {}, {}, r.at, {}, {}, {}, {}});
      if (!d.back().input) d.back().input = r.input_digest;
      if (!d.back().param) d.back().param = r.params;
      if (!d.back().buffers) d.back().buffers = r.buffer_digest;
      if (r.sample_count && r.sample_digest && !d.back().sample_count) {
        d.back().sample_count = r.sample_count;
        d.back().sample_digest = r.sample_digest;
        d.back().sample_hashes = r.sample_hashes;
      }
    }
    log.digests.push_back(std::move(r));
  }
  void operator()(DoneRecord&& r) { log.dones.push_back(r); }
  void operator()(EvalRecord&& r) { log.evals.push_back(std::move(r)); }
  void operator()(LoadRecord&& r) { log.loads.push_back(std::move(r)); }
  void operator()(CollectiveRecord&& r) { log.collectives.push_back(std::move(r)); }
  void operator()(SettingsRecord&& r) { log.settings.push_back(std::move(r)); }
  void operator()(TextLine&& r) { log.context.add(std::move(r)); }
};

/// Gathers records from several streams into one RankLog per rank.
class Merger {
 public:
  void begin_file(const std::string& path) {
    path_ = path;
    unranked_ = nullptr;
  }

  void take(std::vector<Record>& records) {
    for (Record& record : records) {
      RankLog& log = rank_log(origin_of(record).rank);
      if (!std::holds_alternative<TextLine>(record)) ++log.records;
      std::visit(Adder{log}, std::move(record));
    }
    records.clear();
  }

  void end_file(const StreamStats& stats) {
    for (const auto& [rank, count] : stats.unparseable_by_rank) rank_log(rank).unparseable += count;
    files_.push_back(LogFile{path_, stats});
  }

  LoadedLogs result() && {
    LoadedLogs logs;
    for (auto& [rank, log] : by_rank_) logs.ranks.push_back(std::move(log));
    for (auto& log : unranked_logs_) logs.ranks.push_back(std::move(*log));
    logs.files = std::move(files_);
    return logs;
  }

 private:
  RankLog& rank_log(int rank) {
    RankLog* log = nullptr;
    if (rank >= 0) {
      log = &by_rank_[rank];
    } else {
      if (unranked_ == nullptr) {
        unranked_logs_.push_back(std::make_unique<RankLog>());
        unranked_ = unranked_logs_.back().get();
      }
      log = unranked_;
    }
    log->rank = rank;
    if (log->sources.empty() || log->sources.back() != path_) log->sources.push_back(path_);
    return *log;
  }

  std::string path_;
  std::map<int, RankLog> by_rank_;
  std::vector<std::unique_ptr<RankLog>> unranked_logs_;
  RankLog* unranked_ = nullptr;
  std::vector<LogFile> files_;
};

}  // namespace

void RankLog::add(Record record) {
  if (!std::holds_alternative<TextLine>(record)) ++records;
  std::visit(Adder{*this}, std::move(record));
}

const std::string& RankLog::label() const {
  static const std::string kNone;
  return sources.empty() ? kNone : sources.front();
}

std::vector<Record> RankLog::typed_records() const {
  std::vector<Record> out;
  out.reserve(static_cast<std::size_t>(records));
  auto append = [&](const auto& v) { out.insert(out.end(), v.begin(), v.end()); };
  append(runs);
  append(pg_ready);
  append(batches);
  append(models);
  append(layouts);
  append(steps);
  append(heartbeats);
  append(micro_batches);
  append(shapes);
  append(losses);
  append(checkpoints);
  append(digests);
  append(dones);
  append(evals);
  append(loads);
  append(settings);
  return out;
}

RankLog rank_log_of(std::string source, const std::vector<Record>& records) {
  RankLog log;
  log.sources.push_back(std::move(source));
  for (const Record& record : records) {
    if (log.rank < 0) log.rank = origin_of(record).rank;
    log.add(record);
  }
  return log;
}

const RankLog* LoadedLogs::find(int rank) const {
  for (const RankLog& log : ranks) {
    if (log.rank == rank) return &log;
  }
  return nullptr;
}

int rank_from_path(const std::string& path) {
  std::string_view name = path;
  if (std::size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  std::size_t at = name.rfind("rank");
  if (at == std::string_view::npos) return -1;
  std::size_t i = at + 4;
  if (i < name.size() && (name[i] == '_' || name[i] == '-' || name[i] == '.')) ++i;
  int value = 0;
  std::size_t start = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i - start < 7) {
    value = value * 10 + (name[i] - '0');
    ++i;
  }
  return i == start ? -1 : value;
}

Expected<StreamStats> stream_log_file(const std::string& path, const ParserOptions& options,
                                      int default_rank,
                                      const std::function<void(std::vector<Record>&)>& take) {
  auto unreadable = [&](int err) {
    Error error =
        make_error(ErrorKind::kInput, std::string("cannot read log: ") + std::strerror(err),
                   "check the path and its permissions");
    error.file = path;
    return tl::unexpected(std::move(error));
  };
  // A regular file only: a FIFO or /dev/zero would never end (core/input_file).
  auto file = open_input_stream(path);
  if (!file) return tl::unexpected(file.error());
  ReadBuffer buffer(std::size_t{1} << 20);
  std::vector<Record> records;
  LogStream stream(options.format, default_rank, options.custom());
  while (true) {
    std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file->get());
    if (n > 0) {
      stream.feed(std::string_view(buffer.data(), n), records);
      take(records);
      records.clear();
    }
    if (n < buffer.size()) {
      if (std::ferror(file->get())) return unreadable(errno != 0 ? errno : EIO);
      break;
    }
  }
  stream.finish(records);
  take(records);
  return stream.stats();
}

Expected<LoadedLogs> load_logs(const std::vector<std::string>& paths,
                               const ParserOptions& options) {
  Merger merger;
  for (const std::string& path : paths) {
    merger.begin_file(path);
    auto stats = stream_log_file(path, options, rank_from_path(path),
                                 [&](std::vector<Record>& records) { merger.take(records); });
    if (!stats) return tl::unexpected(std::move(stats.error()));
    merger.end_file(*stats);
  }
  return std::move(merger).result();
}

LoadedLogs load_text(std::string_view text, const std::string& name, const ParserOptions& options,
                     int default_rank) {
  Merger merger;
  merger.begin_file(name);
  LogStream stream(options.format, default_rank, options.custom());
  std::vector<Record> records;
  stream.feed(text, records);
  stream.finish(records);
  merger.take(records);
  merger.end_file(stream.stats());
  return std::move(merger).result();
}

}  // namespace bigmac::logs
