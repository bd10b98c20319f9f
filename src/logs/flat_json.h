#pragma once

#include <cstddef>
#include <string_view>

#include "logs/field_bag.h"

namespace bigmac::logs {

/// What read_flat_json made of a line.
enum class FlatJson {
  kRead,   ///< the bag holds the line's fields, exactly as JsonLineReader's simdjson path would
  kDefer,  ///< not the common shape: clear the bag and let the simdjson path decide
};

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
/// `readable` is how many bytes from line.data() may be read (as JsonLineReader::read takes it):
/// slack past the line lets whole words be loaded; what lies past the line is never used.
FlatJson read_flat_json(std::string_view line, std::size_t readable, FieldBag& bag,
                        KeyGuess& guess);

}  // namespace bigmac::logs
