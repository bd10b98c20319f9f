#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

namespace bigmac {

/// `value` as a T when T can hold it exactly; nullopt where a cast would wrap or truncate.
/// Every narrowing of an integer that came from input goes through here.
template <std::integral T, std::integral U>
constexpr std::optional<T> narrow(U value) {
  if (!std::in_range<T>(value)) return std::nullopt;
  return static_cast<T>(value);
}

/// The whole of `text` as a base-10 (or `base`) integer that fits `min`..`max`: an optional
/// '-', digits, nothing else (no spaces, no '+', no "0x"). nullopt for anything else, including
/// a number too large for int64, which std::strtol would silently clamp and sscanf("%d") would
/// make undefined.
std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                          int base = 10);

/// parse_integer within the range of T.
template <std::integral T>
std::optional<T> parse_integer_as(std::string_view text, int base = 10) {
  static_assert(sizeof(T) <= sizeof(std::int64_t));
  constexpr auto lo = std::is_signed_v<T> ? static_cast<std::int64_t>(std::numeric_limits<T>::min())
                                          : std::int64_t{0};
  constexpr auto hi = std::in_range<std::int64_t>(std::numeric_limits<T>::max())
                          ? static_cast<std::int64_t>(std::numeric_limits<T>::max())
                          : std::numeric_limits<std::int64_t>::max();
  auto v = parse_integer(text, lo, hi, base);
  if (!v) return std::nullopt;
  return static_cast<T>(*v);
}

/// a × b, a + b and a - b, nullopt where int64 would overflow.
std::optional<std::int64_t> checked_multiply(std::int64_t a, std::int64_t b);
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b);
std::optional<std::int64_t> checked_subtract(std::int64_t a, std::int64_t b);

}  // namespace bigmac
