#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "config/schema.h"

namespace bigmac::config {

/// Converts a TOML node to the entry's type, checking limits and choices. The error message
/// says what was found and what was expected; the caller adds file, line and key.
tl::expected<Value, std::string> value_from_toml(const SchemaEntry& entry, const toml::node& node);

/// Converts text from an environment variable or `--set` to the entry's type.
tl::expected<Value, std::string> value_from_text(const SchemaEntry& entry, std::string_view text);

/// Best-effort typed value for keys outside the schema (`[gates.<id>]` overrides): TOML syntax
/// when it parses (numbers, booleans, arrays), the plain text otherwise.
Value value_from_free_text(std::string_view text);
Value value_from_free_toml(const toml::node& node);

}  // namespace bigmac::config
