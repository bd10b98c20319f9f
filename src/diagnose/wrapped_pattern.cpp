#include "diagnose/wrapped_pattern.h"

#include <algorithm>

namespace bigmac::diagnose {
namespace {

// Length of the escape at `pattern[i]` (a backslash): `\d`, `\x41`, `\x{263a}`, `\p{Greek}`,
// `\Q...\E`.
std::size_t escape_length(std::string_view pattern, std::size_t i) {
  if (i + 1 >= pattern.size()) return pattern.size() - i;
  const char c = pattern[i + 1];
  if (c == 'Q') {
    const std::size_t end = pattern.find("\\E", i + 2);
    return end == std::string_view::npos ? pattern.size() - i : end + 2 - i;
  }
  if ((c == 'x' || c == 'p' || c == 'P') && i + 2 < pattern.size() && pattern[i + 2] == '{') {
    const std::size_t end = pattern.find('}', i + 3);
    return end == std::string_view::npos ? pattern.size() - i : end + 1 - i;
  }
  if (c == 'x') return std::min<std::size_t>(4, pattern.size() - i);
  if (c == 'p' || c == 'P') return std::min<std::size_t>(3, pattern.size() - i);
  return 2;
}

// Length of the character class starting at `pattern[i]` (a `[`).
std::size_t class_length(std::string_view pattern, std::size_t i) {
  std::size_t j = i + 1;
  if (j < pattern.size() && pattern[j] == '^') ++j;
  if (j < pattern.size() && pattern[j] == ']') ++j;  // a leading `]` is a literal
  while (j < pattern.size() && pattern[j] != ']') {
    if (pattern[j] == '\\') {
      j += escape_length(pattern, j);
    } else if (pattern[j] == '[' && j + 1 < pattern.size() && pattern[j + 1] == ':') {
      const std::size_t end = pattern.find(":]", j + 2);
      j = end == std::string_view::npos ? pattern.size() : end + 2;
    } else {
      ++j;
    }
  }
  return (j < pattern.size() ? j + 1 : j) - i;
}

}  // namespace

std::string space_tolerant(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    if (c == '\\') {
      const std::size_t n = escape_length(pattern, i);
      const std::string_view esc = pattern.substr(i, n);
      i += n;
      if ((esc == "\\s" || esc == "\\ ") && i < pattern.size() && pattern[i] == '+') {
        out += esc;
        out += '*';
        ++i;
      } else if (esc == "\\ " && (i >= pattern.size() || pattern[i] != '?')) {
        out += "\\ ?";
      } else {
        out += esc;
      }
    } else if (c == '[') {
      const std::size_t n = class_length(pattern, i);
      out += pattern.substr(i, n);
      i += n;
    } else if (c == ' ') {
      ++i;
      const char next = i < pattern.size() ? pattern[i] : '\0';
      if (next == '+') {
        out += " *";
        ++i;
      } else if (next == '?' || next == '*' || next == '{') {
        out += ' ';  // already optional, or counted: kept as written
      } else {
        out += " ?";
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

bool anchored_to_line(std::string_view pattern) {
  for (std::size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    if (c == '\\') {
      const std::size_t n = escape_length(pattern, i);
      if (n == 2 && (pattern[i + 1] == 'A' || pattern[i + 1] == 'z')) return true;
      i += n;
    } else if (c == '[') {
      i += class_length(pattern, i);
    } else if (c == '^' || c == '$') {
      return true;
    } else {
      ++i;
    }
  }
  return false;
}

}  // namespace bigmac::diagnose
