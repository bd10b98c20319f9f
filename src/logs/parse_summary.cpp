#include "logs/parse_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "logs/contract_names.h"
#include "logs/record_json.h"

namespace bigmac::logs {

namespace {

std::vector<std::string> step_fields(const std::vector<StepRecord>& steps) {
  bool loss = false, grad_norm = false, lr = false, samples = false, ms = false;
  std::vector<std::string> extra;
  for (const StepRecord& s : steps) {
    loss = loss || s.loss.has_value();
    grad_norm = grad_norm || s.grad_norm.has_value();
    lr = lr || s.lr.has_value();
    samples = samples || s.samples_per_step.has_value();
    ms = ms || s.step_ms.has_value();
    for (const auto& [name, value] : s.extra) {
      if (std::find(extra.begin(), extra.end(), name) == extra.end()) extra.push_back(name);
    }
  }
  std::vector<std::string> fields;
  if (loss) fields.emplace_back("loss");
  if (grad_norm) fields.emplace_back("grad_norm");
  if (lr) fields.emplace_back("lr");
  if (samples) fields.emplace_back("samples_per_step");
  if (ms) fields.emplace_back("step_ms");
  fields.insert(fields.end(), extra.begin(), extra.end());
  return fields;
}

void count(std::map<std::string, std::int64_t>& events, EventKind event, std::size_t n) {
  if (n > 0) events[std::string(event_kind_name(event))] += static_cast<std::int64_t>(n);
}

RankSummary summarize_rank(const RankLog& log) {
  RankSummary s;
  s.rank = log.rank;
  s.sources = log.sources;
  s.records = log.records;
  s.steps = static_cast<std::int64_t>(log.steps.size());
  if (!log.steps.empty()) {
    s.first_step = log.steps.front().global_step;
    s.last_step = log.steps.back().global_step;
  }
  s.step_fields = step_fields(log.steps);
  count(s.events, EventKind::kRun, log.runs.size());
  count(s.events, EventKind::kPgReady, log.pg_ready.size());
  count(s.events, EventKind::kBatch, log.batches.size());
  count(s.events, EventKind::kModel, log.models.size());
  count(s.events, EventKind::kLayout, log.layouts.size());
  count(s.events, EventKind::kStep, log.steps.size());
  count(s.events, EventKind::kHeartbeat, log.heartbeats.size());
  count(s.events, EventKind::kMicroBatch, log.micro_batches.size());
  count(s.events, EventKind::kShape, log.shapes.size());
  count(s.events, EventKind::kLoss, log.losses.size());
  count(s.events, EventKind::kCheckpoint, log.checkpoints.size());
  count(s.events, EventKind::kDigest, log.digests.size());
  count(s.events, EventKind::kDone, log.dones.size());
  count(s.events, EventKind::kLoad, log.loads.size());
  count(s.events, EventKind::kCollective, log.collectives.size());
  if (!log.settings.empty()) s.events["cfg"] = static_cast<std::int64_t>(log.settings.size());
  s.context_lines = log.context.seen();
  s.unparseable = log.unparseable;
  return s;
}

std::string rank_label(int rank) { return rank >= 0 ? fmt::format("rank {}", rank) : "rank ?"; }

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace

ParseSummary summarize(const LoadedLogs& logs) {
  ParseSummary summary;
  for (const LogFile& file : logs.files) {
    summary.files.push_back(FileSummary{file.path, file.stats.detected, file.stats});
  }
  for (const RankLog& log : logs.ranks) summary.ranks.push_back(summarize_rank(log));
  return summary;
}

std::string format_text(const ParseSummary& summary) {
  std::string out;
  for (const FileSummary& file : summary.files) {
    const StreamStats& st = file.stats;
    out += fmt::format("{}: {} format, {} lines, {} records, {} context lines, {} unparseable",
                       file.path,
                       file.format == LogFormat::kAuto ? "no known" : format_name(file.format),
                       st.lines, st.records, st.context_lines, st.unparseable);
    if (st.unknown_events > 0) out += fmt::format(", {} unknown events", st.unknown_events);
    if (st.oversized_lines > 0) out += fmt::format(", {} oversized lines", st.oversized_lines);
    out += '\n';
    for (const UnparseableLine& bad : st.unparseable_examples) {
      out += fmt::format("  {}:{}: {}: {}\n", file.path, bad.line, bad.reason,
                         bad.excerpt.substr(0, 80));
    }
  }
  for (const RankSummary& r : summary.ranks) {
    out += fmt::format("{} ({}): {} steps", rank_label(r.rank), join(r.sources, ", "), r.steps);
    if (r.first_step) out += fmt::format(" {}..{}", *r.first_step, *r.last_step);
    if (!r.step_fields.empty()) out += " [" + join(r.step_fields, " ") + "]";
    std::vector<std::string> events;
    for (const auto& [name, n] : r.events) events.push_back(fmt::format("{} {}", name, n));
    if (!events.empty()) out += "; events: " + join(events, ", ");
    out += fmt::format("; {} context lines, {} unparseable\n", r.context_lines, r.unparseable);
  }
  if (summary.ranks.empty()) out += "no lines read\n";
  return out;
}

std::string format_json(const ParseSummary& summary) {
  nlohmann::json doc;
  doc["files"] = nlohmann::json::array();
  for (const FileSummary& file : summary.files) {
    const StreamStats& st = file.stats;
    nlohmann::json examples = nlohmann::json::array();
    for (const UnparseableLine& bad : st.unparseable_examples) {
      examples.push_back(
          {{"line", bad.line}, {"rank", bad.rank}, {"reason", bad.reason}, {"text", bad.excerpt}});
    }
    doc["files"].push_back({{"path", file.path},
                            {"format", std::string(format_name(file.format))},
                            {"bytes", st.bytes},
                            {"lines", st.lines},
                            {"records", st.records},
                            {"context_lines", st.context_lines},
                            {"blank_lines", st.blank_lines},
                            {"unparseable", st.unparseable},
                            {"unknown_events", st.unknown_events},
                            {"oversized_lines", st.oversized_lines},
                            {"unparseable_examples", examples}});
  }
  doc["ranks"] = nlohmann::json::array();
  for (const RankSummary& r : summary.ranks) {
    nlohmann::json rank = {{"rank", r.rank},
                           {"sources", r.sources},
                           {"records", r.records},
                           {"steps", r.steps},
                           {"first_step", nullptr},
                           {"last_step", nullptr},
                           {"step_fields", r.step_fields},
                           {"events", r.events},
                           {"context_lines", r.context_lines},
                           {"unparseable", r.unparseable}};
    if (r.first_step) rank["first_step"] = *r.first_step;
    if (r.last_step) rank["last_step"] = *r.last_step;
    doc["ranks"].push_back(std::move(rank));
  }
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int run_parse(const std::vector<std::string>& paths, const ParserOptions& options,
              ParseOutput output, std::ostream& out, std::ostream& err) {
  if (options.format == LogFormat::kRegex && !options.fields) {
    err << "error: --format regex needs a [logs.fields] table in the configuration\n";
    return to_int(ExitCode::kBadInput);
  }
  if (output == ParseOutput::kRecords) {
    for (const std::string& path : paths) {
      auto stats =
          stream_log_file(path, options, rank_from_path(path), [&](std::vector<Record>& records) {
            for (const Record& record : records) {
              if (!std::holds_alternative<TextLine>(record))
                out << record_json_line(record, path) << '\n';
            }
          });
      if (!stats) {
        err << "error: " << stats.error().format() << '\n';
        return to_int(exit_code_for(stats.error().kind));
      }
      for (const UnparseableLine& bad : stats->unparseable_examples) {
        err << path << ':' << bad.line << ": not read: " << bad.reason << ": "
            << bad.excerpt.substr(0, 80) << '\n';
      }
    }
    return to_int(ExitCode::kOk);
  }
  Expected<LoadedLogs> logs = load_logs(paths, options);
  if (!logs) {
    err << "error: " << logs.error().format() << '\n';
    return to_int(exit_code_for(logs.error().kind));
  }
  ParseSummary summary = summarize(*logs);
  out << (output == ParseOutput::kJson ? format_json(summary) : format_text(summary));
  return to_int(ExitCode::kOk);
}

}  // namespace bigmac::logs
