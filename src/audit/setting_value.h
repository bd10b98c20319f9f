#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::audit {

/// A value as written in a project: its text as the reader shows it, and its meaning as a
/// number or a list of numbers where it has one, so that `4`, "4" and 4 compare equal.
struct SettingValue {
  std::string text;                                   ///< shown to the user: 4, [8, 16], 1f1b
  std::optional<std::int64_t> integer;                ///< when the value is a whole number
  std::optional<std::vector<std::int64_t>> integers;  ///< when it is a list of them

  /// Reads a scalar written as text (shell words, YAML scalars): "4" is 4, "8,16,24" and
  /// "[8, 16, 24]" are lists.
  static SettingValue from_text(std::string_view text);
  static SettingValue from_integer(std::int64_t value);
  static SettingValue from_integers(const std::vector<std::int64_t>& values);

  /// Values meaning "not set" or "work it out" (null, None, "auto", and the -1 that frameworks
  /// such as torchtitan use for "derive it"): never a conflicting or a derived-but-written value.
  bool means_unset() const;

  bool same_as(const SettingValue& other) const;
};

}  // namespace bigmac::audit
