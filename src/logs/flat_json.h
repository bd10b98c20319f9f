#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "logs/field_bag.h"

namespace bigmac::logs {

/// What FlatJsonReader made of a line.
enum class FlatJson {
  kRead,   ///< the bag holds the line's fields, exactly as JsonLineReader's simdjson path would
  kDefer,  ///< not the common shape: clear the bag and let the simdjson path decide
};

namespace flat_detail {
struct Shapes;
}

/// Reads the shape almost every bigmac-log JSON line has in one pass over its bytes: one object
/// whose values are numbers, strings of printable ASCII without escapes, booleans, nulls, or
/// flat lists of those. Anything else is deferred, never judged: escapes, other bytes in
/// strings (UTF-8 is validated by simdjson), nested objects or lists, NaN words, whatever is not
/// valid JSON, integers of more than 18 digits, reals the C++ library cannot convert. So this
/// path can make reading faster but never different; tests and a fuzzer compare it with
/// simdjson on the same lines.
///
/// Reals are converted as simdjson converts them (Clinger's exact fast path when the digits fit
/// in 53 bits and |exponent| <= 22, else std::from_chars; both round correctly).
///
/// Writers print each event the same way every time, so the reader remembers the last line
/// shape of each event (the text between values, and whether each value was a string or a
/// number): a line that opens with `{"ev":"<event>"` (or `{"ev": "<event>"`, as Python's
/// json.dumps writes it) is first checked against that shape, text by text, and only read key by
/// key when it differs. One reader per stream; not thread-safe.
class FlatJsonReader {
 public:
  FlatJsonReader();
  ~FlatJsonReader();
  FlatJsonReader(FlatJsonReader&&) noexcept;
  FlatJsonReader& operator=(FlatJsonReader&&) noexcept;

  /// `readable` is how many bytes from line.data() may be read (as JsonLineReader::read takes
  /// it): slack past the line lets whole words be loaded; what lies past the line is never used.
  FlatJson read(std::string_view line, std::size_t readable, FieldBag& bag);

  /// Lines read by a remembered shape so far (for tests and benchmarks).
  std::int64_t shaped_lines() const { return shaped_lines_; }

 private:
  std::int64_t shaped_lines_ = 0;
  std::unique_ptr<flat_detail::Shapes> shapes_;
};

}  // namespace bigmac::logs
