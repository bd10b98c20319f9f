#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "core/error.h"

namespace bigmac::config {

/// Parses TOML text into a table; a syntax error becomes an Error with file:line:col.
/// Private to config/: toml++ stays inside this folder.
Expected<toml::table> parse_toml_text(std::string_view text, const std::string& path);

/// A scalar node as it would be written in TOML (for messages and dates).
std::string toml_value_text(const toml::node& node);

}  // namespace bigmac::config
