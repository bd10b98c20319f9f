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

/// `value` as an integer when it is one exactly and safely (finite, whole, |value| < 2^53);
/// `32.0` is 32, `32.5`, NaN and 1e300 are nullopt.
std::optional<std::int64_t> exact_integer(double value);

/// Whether `text` is one of the non-finite spellings parse_real accepts (sign included).
bool is_nonfinite_word(std::string_view text);

/// The length of the real number that `text` starts with, as parse_real reads it: an optional
/// sign, digits with an optional fraction and exponent (`2.31`, `.5`, `5e-05`), or a non-finite
/// word followed by no other letter (`nan`, `-inf`). 0 when `text` does not start with one; what
/// follows (a unit: `30ms`, `12.3%`) is left to the caller.
std::size_t number_length(std::string_view text);

}  // namespace bigmac::logs
