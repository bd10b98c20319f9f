#include "logs/number_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/checked_integer.h"
#include "core/trim.h"

namespace bigmac::logs {

namespace {

bool equals_folded(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// Returns +1/-1 with the sign removed from `text`.
double take_sign(std::string_view& text) {
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    double sign = text.front() == '-' ? -1.0 : 1.0;
    text.remove_prefix(1);
    return sign;
  }
  return 1.0;
}

std::optional<double> nonfinite(std::string_view text) {
  double sign = take_sign(text);
  if (equals_folded(text, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (equals_folded(text, "inf") || equals_folded(text, "infinity")) {
    return sign * std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

}  // namespace

bool is_nonfinite_word(std::string_view text) { return nonfinite(trim(text)).has_value(); }

std::optional<double> parse_real(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::string_view digits = text;
  if (digits.front() == '+') digits.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc() && end == digits.data() + digits.size()) {
    // from_chars also reads "nan"/"inf"; that is fine, the spellings match ours.
    return value;
  }
  if (ec == std::errc::result_out_of_range && end == digits.data() + digits.size()) {
    // Past the range either way: 1e999 is infinite, 1e-999 is zero (strtod tells which).
    const std::string copy(digits);
    const double nearest = std::strtod(copy.c_str(), nullptr);
    if (!std::isinf(nearest)) return nearest;
    return digits.front() == '-' ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity();
  }
  return nonfinite(text);
}

std::optional<std::int64_t> exact_integer(double value) {
  constexpr double kLimit = 9007199254740992.0;                   // 2^53
  if (!(value > -kLimit && value < kLimit)) return std::nullopt;  // also NaN
  auto whole = static_cast<std::int64_t>(value);
  if (static_cast<double>(whole) != value) return std::nullopt;
  return whole;
}

std::size_t number_length(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  std::size_t whole = digits();
  std::size_t fraction = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole + fraction == 0) {
    // A non-finite word, whole: `nan` but not `nano`.
    std::size_t start = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    std::size_t end = start;
    while (end < text.size() && ((text[end] | 0x20) >= 'a' && (text[end] | 0x20) <= 'z')) ++end;
    return is_nonfinite_word(text.substr(0, end)) ? end : 0;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t mark = i++;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) i = mark;  // `5e` is the number 5 and a unit
  }
  return i;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  return bigmac::parse_integer(text, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max());
}

}  // namespace bigmac::logs
