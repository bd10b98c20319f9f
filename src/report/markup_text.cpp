#include "report/markup_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/utf8.h"

namespace bigmac::report {

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      // A rank's stderr may hold any bytes; one invalid byte makes junit.xml unreadable.
      const std::size_t length = utf8_sequence(text, i);
      if (length == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD replacement character
      } else {
        out.append(text.substr(i, length));
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        out += c;
        break;
      default:
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    }
  }
  return out;
}

namespace {

// Plain text of one line: control characters as spaces, invalid UTF-8 as U+FFFD.
std::string one_line(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t length = utf8_sequence(text, i);
      if (length == 0) {
        out += "\xEF\xBF\xBD";
      } else {
        out.append(text.substr(i, length));
        i += length - 1;
      }
    } else {
      out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
    }
  }
  return out;
}

std::size_t longest_backtick_run(std::string_view text) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

std::string markdown_code(std::string_view text, bool in_table) {
  std::string body = one_line(text);
  if (in_table) {
    std::string escaped;
    for (char c : body) {
      if (c == '|') escaped.push_back('\\');
      escaped.push_back(c);
    }
    body = std::move(escaped);
  }
  if (body.empty()) body.push_back(' ');
  const std::size_t ticks = longest_backtick_run(body) + 1;
  // A backtick at either end would join the fence; CommonMark strips one space from each side
  // of a body that has a space at both ends (and is not all spaces). One space of padding on
  // each side covers both.
  const bool pad = body.front() == '`' || body.back() == '`' ||
                   (body.front() == ' ' && body.back() == ' ' &&
                    body.find_first_not_of(' ') != std::string::npos);
  std::string out;
  out.reserve(body.size() + 2 * ticks + 2);
  out.append(ticks, '`');
  if (pad) out.push_back(' ');
  out.append(body);
  if (pad) out.push_back(' ');
  out.append(ticks, '`');
  return out;
}

std::string markdown_code_block(const std::vector<std::string>& lines) {
  std::size_t longest = 0;
  std::vector<std::string> clean;
  for (const std::string& line : lines) {
    clean.push_back(one_line(line));
    longest = std::max(longest, longest_backtick_run(clean.back()));
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  std::string out = fence + "text\n";
  for (const std::string& line : clean) out += line + "\n";
  return out + fence + "\n";
}

std::string escape_markdown_cell(std::string_view text) {
  std::string out;
  for (char c : escape_xml(text)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", value);
}

std::string format_relative(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return "inf";
  return fmt::format("{:.3g}", value);
}

std::string format_duration(double seconds) {
  if (!(seconds > 0)) return "–";
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto whole = static_cast<long long>(std::llround(seconds));
  if (whole < 3600) return fmt::format("{} m {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} m", whole / 3600, (whole % 3600) / 60);
}

}  // namespace bigmac::report
