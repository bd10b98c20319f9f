#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bigmac {

/// Levenshtein distance between two ASCII strings.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, if it is close enough to be a plausible typo
/// (distance at most a third of the word's length, and at least 1 allowed).
std::optional<std::string> closest_match(std::string_view word,
                                         std::span<const std::string_view> candidates);

}  // namespace bigmac
