#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "logs/field_map.h"
#include "logs/log_format.h"
#include "logs/log_stream.h"
#include "logs/parser_options.h"
#include "logs/rank_log.h"

namespace bigmac::logs {

/// What `bigmac-bringup parse` says about one rank.
struct RankSummary {
  int rank = -1;
  std::vector<std::string> sources;
  std::int64_t records = 0;
  std::int64_t steps = 0;
  std::optional<std::int64_t> first_step;
  std::optional<std::int64_t> last_step;
  std::vector<std::string> step_fields;        ///< present in at least one step record
  std::map<std::string, std::int64_t> events;  ///< record count per event name
  std::int64_t context_lines = 0;
  std::int64_t unparseable = 0;
};

/// What `bigmac-bringup parse` says about one file.
struct FileSummary {
  std::string path;
  LogFormat format = LogFormat::kAuto;  ///< detected (kAuto: no record found)
  StreamStats stats;
};

/// The result of `bigmac-bringup parse LOG...`.
struct ParseSummary {
  std::vector<FileSummary> files;
  std::vector<RankSummary> ranks;
};

ParseSummary summarize(const LoadedLogs& logs);

/// Human-readable: one block per file (with unparseable examples), then one line per rank.
std::string format_text(const ParseSummary& summary);

/// The same as a JSON document (invalid UTF-8 in excerpts is replaced, never thrown).
std::string format_json(const ParseSummary& summary);

/// What `parse` prints: the summary as text or JSON, or every record as a JSON line.
enum class ParseOutput { kText, kJson, kRecords };

/// `bigmac-bringup parse LOG... [--format F] [--json | --records]`: prints to `out` and returns
/// the exit code: 0 when every file was read (unparseable lines are reported, not fatal), 2 when
/// a file is unreadable (the Error goes to `err`). kRecords prints each file's records in line
/// order (record_json.h) and its unparseable examples to `err`.
int run_parse(const std::vector<std::string>& paths, const ParserOptions& options,
              ParseOutput output, std::ostream& out, std::ostream& err);

}  // namespace bigmac::logs
