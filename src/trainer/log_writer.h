#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json_quote.h"
#include "logs/contract_names.h"

namespace bigmac::trainer {

using logs::EventKind;
using logs::FieldKey;

/// One bigmac-log v1 event under construction: `{"ev":...,"rank":...,"t":...,<fields>}`
/// (docs/log-contract.md). Event and field names come from the contract's one list
/// (logs/contract_names.h), so the writer cannot spell a name the parsers do not know.
/// Non-finite floats are written bare (NaN, Infinity) as Python does.
class LogEvent {
 public:
  LogEvent(EventKind ev, int rank, double wall_time_s);

  LogEvent& field(FieldKey key, std::int64_t value);
  LogEvent& field(FieldKey key, int value) { return field(key, std::int64_t{value}); }
  LogEvent& field(FieldKey key, double value);
  LogEvent& field(FieldKey key, std::string_view value);
  LogEvent& field(FieldKey key, const char* value) { return field(key, std::string_view(value)); }
  LogEvent& field(FieldKey key, const std::vector<std::int64_t>& values);
  LogEvent& field(FieldKey key, const std::vector<std::string>& values);

  /// The finished line, without the newline.
  std::string line() const { return text_ + "}"; }

 private:
  void key(FieldKey name);
  std::string text_;
};

/// A JSON number for `value`: shortest round-trip form, always with a fraction or exponent so
/// readers see a float; NaN / Infinity / -Infinity when not finite.
std::string format_json_double(double value);

/// Seconds since the Unix epoch, the `t` of every event.
double wall_time_s();

/// Where events go: stdout or a file, one line each, flushed per line so a watchdog reading the
/// file sees progress as it happens and a crash loses at most the line being written.
class LogWriter {
 public:
  /// `path` empty or "-" means stdout. Appends to an existing file.
  static Expected<LogWriter> open(const std::string& path, int rank);
  LogWriter(LogWriter&& other) noexcept;
  LogWriter& operator=(LogWriter&&) = delete;
  LogWriter(const LogWriter&) = delete;
  ~LogWriter();

  /// A new event of this writer's rank, stamped now.
  LogEvent event(EventKind ev) const { return LogEvent(ev, rank_, wall_time_s()); }
  void write(const LogEvent& event);
  void set_rank(int rank) { rank_ = rank; }

 private:
  LogWriter(std::FILE* file, bool owned, int rank) : file_(file), owned_(owned), rank_(rank) {}
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  int rank_ = 0;
};

}  // namespace bigmac::trainer
