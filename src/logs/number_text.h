#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bigmac::logs {

/// A real number as trainers print it: decimal or exponent form, with an optional sign, and the
/// non-finite spellings of Python and C++ in any case (`nan`, `NaN`, `NAN`, `inf`, `-inf`,
/// `Infinity`, `+inf`). Surrounding spaces are allowed; anything else is nullopt.
std::optional<double> parse_real(std::string_view text);

/// A base-10 integer that fits in 64 bits, optional sign, surrounding spaces allowed.
std::optional<std::int64_t> parse_integer(std::string_view text);

/// Whether `text` is one of the non-finite spellings parse_real accepts (sign included).
bool is_nonfinite_word(std::string_view text);

}  // namespace bigmac::logs
