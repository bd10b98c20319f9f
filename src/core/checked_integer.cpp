#include "core/checked_integer.h"

#include <charconv>

namespace bigmac {

std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                          int base) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  // from_chars takes no '+' and no leading spaces; it reports out-of-range instead of clamping.
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<std::int64_t> checked_multiply(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<std::int64_t> checked_subtract(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace bigmac
