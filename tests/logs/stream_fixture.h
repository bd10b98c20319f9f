#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "logs/log_stream.h"

namespace bigmac::logs::testing {

/// Everything a stream made of `text`, fed in one piece.
struct Parsed {
  std::vector<Record> records;
  StreamStats stats;

  template <class T>
  std::vector<T> all() const {
    std::vector<T> found;
    for (const Record& r : records) {
      if (const T* x = std::get_if<T>(&r)) found.push_back(*x);
    }
    return found;
  }
};

inline Parsed parse_text(std::string_view text, LogFormat format = LogFormat::kAuto,
                         const FieldMap* custom = nullptr, StreamLimits limits = {}) {
  LogStream stream(format, -1, custom, limits);
  Parsed parsed;
  stream.feed(text, parsed.records);
  stream.finish(parsed.records);
  parsed.stats = stream.stats();
  return parsed;
}

/// The number a step keeps in `extra` under `name`; -1 when it has none.
inline double extra(const StepRecord& step, std::string_view name) {
  for (const auto& [key, value] : step.extra) {
    if (key == name) return value;
  }
  return -1;
}

}  // namespace bigmac::logs::testing
