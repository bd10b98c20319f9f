#pragma once

#include <string>
#include <string_view>

namespace bigmac {

/// `value` as a quoted JSON string: quote, backslash, newline, CR and tab as their short
/// escapes, other control characters as \u00XX. Also a valid TOML basic string.
std::string quote_json(std::string_view value);

}  // namespace bigmac
