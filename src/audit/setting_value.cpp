#include "audit/setting_value.h"

#include <charconv>

#include "core/trim.h"

namespace bigmac::audit {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

/// "8,16,24", "8 16 24", "[8, 16, 24]", "(8, 16)": a list of whole numbers, or nothing.
std::optional<std::vector<std::int64_t>> parse_integers(std::string_view s) {
  s = trim(s);
  const bool bracketed = s.size() >= 2 && ((s.front() == '[' && s.back() == ']') ||
                                           (s.front() == '(' && s.back() == ')'));
  if (bracketed) s = s.substr(1, s.size() - 2);
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  bool separated = bracketed;
  while (start <= s.size()) {
    std::size_t end = s.find_first_of(", ", start);
    if (end == std::string_view::npos) end = s.size();
    separated |= end < s.size();
    std::string_view item = s.substr(start, end - start);
    if (!trim(item).empty()) {
      auto v = parse_integer(item);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    start = end + 1;
  }
  if (!separated) return std::nullopt;
  return out;
}

}  // namespace

SettingValue SettingValue::from_text(std::string_view text) {
  SettingValue v;
  v.text = std::string(trim(text));
  v.integer = parse_integer(v.text);
  if (!v.integer) v.integers = parse_integers(v.text);
  return v;
}

SettingValue SettingValue::from_integer(std::int64_t value) {
  SettingValue v;
  v.text = std::to_string(value);
  v.integer = value;
  return v;
}

SettingValue SettingValue::from_integers(const std::vector<std::int64_t>& values) {
  SettingValue v;
  v.text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    v.text += (i ? ", " : "") + std::to_string(values[i]);
  }
  v.text += "]";
  v.integers = values;
  return v;
}

bool SettingValue::means_unset() const {
  if (integer) return *integer == -1;
  return text.empty() || text == "null" || text == "None" || text == "auto" || text == "~";
}

bool SettingValue::same_as(const SettingValue& other) const {
  if (integer || other.integer) return integer == other.integer;
  if (integers || other.integers) return integers == other.integers;
  return text == other.text;
}

}  // namespace bigmac::audit
