#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "core/checked_integer.h"
#include "core/error.h"

namespace bigmac {

/// Parses JSON `text` read from `path`. The error is located (file:line:col) and says what was
/// wrong in words one can act on: a file that stops mid-value is called truncated, NaN and
/// Infinity are named as what JSON cannot hold, an empty file is called empty.
Expected<nlohmann::json> parse_json(std::string_view text, const std::filesystem::path& path);

/// read_file (a regular file, bounded) and parse_json.
Expected<nlohmann::json> read_json_file(const std::filesystem::path& path);

/// A JSON integer as int64 when it is one and fits; nullopt for any other type, a fraction, or
/// an unsigned value past INT64_MAX (which get<std::int64_t>() would silently wrap).
std::optional<std::int64_t> json_integer(const nlohmann::json& value);

/// `object[key]` as a T when it is an integer T can hold; `fallback` when the key is absent or
/// holds anything else. For files the tool wrote itself (an attempt's result.json), where a
/// damaged value should not stop a report.
template <std::integral T>
T json_int(const nlohmann::json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  const auto wide = json_integer(*it);
  if (!wide) return fallback;
  return narrow<T>(*wide).value_or(fallback);
}

/// A real for a JSON file the tool writes: the number when finite, else "nan", "inf" or "-inf"
/// (JSON has no non-finite numbers; nlohmann writes them as null, which reads back as no
/// number at all). real_from_json reads it back.
nlohmann::json json_real(double value);

/// A real as json_real writes it: a number, or "nan" / "inf" / "-inf" (also "NaN",
/// "Infinity", "-Infinity"); null reads as NaN, the null an older writer left for one.
/// nullopt for anything else.
std::optional<double> real_from_json(const nlohmann::json& value);

/// `value` as JSON text (indent as nlohmann's dump: -1 one line). Every JSON the tool writes goes
/// through here: a byte that is not UTF-8 (a rank's output cut mid-character when it was
/// stopped, a binary line) becomes U+FFFD instead of an exception that would lose the attempt.
std::string json_text(const nlohmann::json& value, int indent = -1);

/// The JSON type of `value` in words ("a string", "an array", "null") for messages.
std::string_view json_type_name(const nlohmann::json& value);

}  // namespace bigmac
