#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "logs/field_bag.h"

namespace bigmac::logs {

/// Reads one bigmac-log JSON object into a FieldBag. The common shape (flat, ASCII, no escapes)
/// is read by FlatJsonReader in one pass; every other line by simdjson On-Demand. Bare `NaN`,
/// `Infinity`, `-Infinity` (Python's json) and `nan`/`inf` (printf) are not JSON; a line that
/// fails to parse and holds such a word outside strings is retried with the word quoted, so the
/// common path pays nothing for them.
class JsonLineReader {
 public:
  /// Which readers a line goes through. kSimdjsonOnly exists for tests and the differential
  /// fuzzer, which check that both give the same fields.
  enum class Path { kFlatFirst, kSimdjsonOnly };

  explicit JsonLineReader(Path path = Path::kFlatFirst);
  ~JsonLineReader();
  JsonLineReader(JsonLineReader&&) noexcept;
  JsonLineReader& operator=(JsonLineReader&&) noexcept;

  /// `readable` is how many bytes starting at line.data() may be read (at least line.size());
  /// with enough slack past the line the parser reads in place, otherwise it copies.
  /// False with `error` set when the line is not one well-formed JSON object.
  bool read(std::string_view line, std::size_t readable, FieldBag& bag, std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Path path_;
};

}  // namespace bigmac::logs
