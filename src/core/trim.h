#pragma once

#include <string_view>

namespace bigmac {

/// Whether `c` is ASCII white space: blank, tab, CR, LF, form feed, vertical tab.
constexpr bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/// `text` without leading and trailing ASCII white space. The one trim of the code base.
constexpr std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace bigmac
