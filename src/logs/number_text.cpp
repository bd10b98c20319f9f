#include "logs/number_text.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "core/checked_integer.h"

namespace bigmac::logs {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

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
    return digits.front() == '-' ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity();
  }
  return nonfinite(text);
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  return bigmac::parse_integer(text, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max());
}

}  // namespace bigmac::logs
