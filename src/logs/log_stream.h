#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "logs/field_map.h"
#include "logs/log_format.h"
#include "logs/record.h"

namespace bigmac::logs {

/// A record-looking line that could not be read, kept as an example for the report.
struct UnparseableLine {
  std::int64_t line = 0;
  int rank = -1;        ///< from the line's prefix, else the stream's default
  std::string reason;   ///< `invalid JSON`, `field loss: expected a number`, ...
  std::string excerpt;  ///< the start of the line, prefixes removed
};

/// What a LogStream has read so far.
struct StreamStats {
  std::int64_t bytes = 0;
  std::int64_t lines = 0;
  std::int64_t records = 0;          ///< typed records (TextLines not counted)
  std::int64_t context_lines = 0;    ///< non-record lines yielded as TextLine
  std::int64_t blank_lines = 0;      ///< empty after prefixes; neither record nor context
  std::int64_t unparseable = 0;      ///< record-looking lines that could not be read
  std::int64_t unknown_events = 0;   ///< well-formed contract lines with an unknown `ev`
  std::int64_t oversized_lines = 0;  ///< longer than StreamLimits::max_line_bytes
  std::vector<UnparseableLine> unparseable_examples;  ///< the first max_examples
  std::map<int, std::int64_t> unparseable_by_rank;    ///< rank as in UnparseableLine
  LogFormat detected = LogFormat::kAuto;              ///< kAuto until a record was recognised
};

/// Bounds that keep memory flat whatever arrives.
struct StreamLimits {
  /// Longer lines are not parsed: their head becomes a truncated TextLine, the rest is skipped
  /// without being buffered.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  std::size_t max_text_bytes = 2048;  ///< a TextLine keeps at most this much
  std::size_t max_examples = 5;       ///< unparseable examples kept in StreamStats
};

/// One rank's (or one file's) byte stream turned into records. Feed bytes as they arrive, in
/// chunks of any size (partial lines and CRLF are fine); complete lines yield records in order.
/// Launcher prefixes (`[rank3]:`, `[default3]:`, srun `3: `), timestamps and ANSI colour codes
/// are removed and give the rank and time where the line has none. Never throws on input.
class LogStream {
 public:
  /// `custom` is used with LogFormat::kRegex and must outlive the stream.
  explicit LogStream(LogFormat format = LogFormat::kAuto, int default_rank = -1,
                     const FieldMap* custom = nullptr, StreamLimits limits = {});
  ~LogStream();
  LogStream(LogStream&&) noexcept;
  LogStream& operator=(LogStream&&) noexcept;

  /// Appends the records of every line completed by `bytes`.
  void feed(std::string_view bytes, std::vector<Record>& out);
  /// Ends the stream: a final line without a newline is read too.
  void finish(std::vector<Record>& out);

  const StreamStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bigmac::logs
