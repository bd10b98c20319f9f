#include "logs/line_prefix.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace bigmac::logs {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the escape sequence at the start of `text` (which starts with ESC).
std::size_t escape_length(std::string_view text) {
  if (text.size() < 2) return text.size();
  if (text[1] == '(' || text[1] == ')') return std::min<std::size_t>(3, text.size());  // charset
  // A string sequence: OSC `ESC ] 0;title BEL` (terminal titles, hyperlinks), DCS, SOS, PM and
  // APC, ended by BEL or ST (`ESC \`); taken whole, or its text would stay in the line.
  if (text[1] == ']' || text[1] == 'P' || text[1] == 'X' || text[1] == '^' || text[1] == '_') {
    for (std::size_t i = 2; i < text.size(); ++i) {
      if (text[i] == '\a') return i + 1;
      if (text[i] == '\x1b') return i + 1 < text.size() && text[i + 1] == '\\' ? i + 2 : i;
    }
    return text.size();
  }
  if (text[1] != '[') return 2;
  std::size_t i = 2;
  while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;
  return i < text.size() ? i + 1 : text.size();
}

// Reads `n` digits at `pos`; -1 when they are not all digits.
int read_digits(std::string_view text, std::size_t pos, std::size_t n) {
  if (pos + n > text.size()) return -1;
  int value = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_digit(text[pos + i])) return -1;
    value = value * 10 + (text[pos + i] - '0');
  }
  return value;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// `YYYY-MM-DD[T ]HH:MM:SS[.,fraction][Z|+HH:MM|+HHMM]` at the start; returns its length or 0.
std::size_t read_timestamp(std::string_view text, double& t) {
  int year = read_digits(text, 0, 4);
  if (year < 0 || text.size() < 19 || text[4] != '-' || text[7] != '-') return 0;
  int month = read_digits(text, 5, 2);
  int day = read_digits(text, 8, 2);
  if (text[10] != 'T' && text[10] != ' ') return 0;
  int hour = read_digits(text, 11, 2);
  int minute = read_digits(text, 14, 2);
  int second = read_digits(text, 17, 2);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60 || text[13] != ':' || text[16] != ':') {
    return 0;
  }
  std::size_t pos = 19;
  double fraction = 0;
  if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
    double scale = 0.1;
    std::size_t digits = 0;
    for (++pos; pos < text.size() && is_digit(text[pos]); ++pos, ++digits) {
      fraction += scale * (text[pos] - '0');
      scale /= 10;
    }
    if (digits == 0) return 0;
  }
  std::int64_t offset = 0;
  if (pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (pos + 5 <= text.size() && (text[pos] == '+' || text[pos] == '-')) {
    bool colon = text[pos + 3] == ':';
    int oh = read_digits(text, pos + 1, 2);
    int om = read_digits(text, pos + (colon ? 4 : 3), 2);
    if (oh >= 0 && om >= 0) {
      offset = (text[pos] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
      pos += colon ? 6 : 5;
    }
  }
  std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  t = static_cast<double>(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction;
  return pos;
}

// `[<letters><digits>]:` at the start; returns its length (and the number) or 0.
std::size_t read_torchrun_tag(std::string_view text, int& rank) {
  if (text.empty() || text[0] != '[') return 0;
  std::size_t i = 1;
  while (i < text.size() && i < 40 &&
         ((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') ||
          text[i] == '_')) {
    ++i;
  }
  if (i == 1) return 0;  // a role name is required: `[3]: ` is text, not torchrun's tag
  std::size_t digits_at = i;
  int value = 0;
  while (i < text.size() && is_digit(text[i]) && i - digits_at < 7) {
    value = value * 10 + (text[i] - '0');
    ++i;
  }
  if (i == digits_at || i + 1 >= text.size() || text[i] != ']' || text[i + 1] != ':') return 0;
  rank = value;
  return i + 2;
}

// srun --label: optional spaces, digits, `: `.
std::size_t read_srun_label(std::string_view text, int& rank) {
  std::size_t i = 0;
  int value = 0;
  std::size_t start = i;
  while (i < text.size() && is_digit(text[i]) && i - start < 7) {
    value = value * 10 + (text[i] - '0');
    ++i;
  }
  if (i == start || i + 1 >= text.size() || text[i] != ':' || text[i + 1] != ' ') return 0;
  rank = value;
  return i + 2;
}

}  // namespace

LinePrefix strip_line_prefix(std::string_view line) {
  LinePrefix prefix;
  std::string_view rest = line;
  // Bounded: each pass removes at least one byte, and real prefixes are a handful deep.
  for (int pass = 0; pass < 16 && !rest.empty(); ++pass) {
    char c = rest.front();
    if (c == '{') break;  // the hot path: a JSON record with no prefix
    std::size_t n = 0;
    if (c == '\x1b') {
      n = escape_length(rest);
    } else if (c == ' ' || c == '\t') {
      n = 1;
    } else if (c == '[') {
      int rank = -1;
      n = read_torchrun_tag(rest, rank);
      if (n > 0) {
        prefix.rank = rank;
      } else {
        double t = 0;
        std::size_t ts = read_timestamp(rest.substr(1), t);
        if (ts > 0 && ts + 1 < rest.size() && rest[ts + 1] == ']') {
          n = ts + 2;
          prefix.t = t;
          prefix.has_time = true;
        }
      }
    } else if (is_digit(c)) {
      double t = 0;
      n = read_timestamp(rest, t);
      if (n > 0) {
        prefix.t = t;
        prefix.has_time = true;
      } else {
        int rank = -1;
        n = read_srun_label(rest, rank);
        if (n > 0) prefix.rank = rank;
      }
    }
    if (n == 0) break;
    rest.remove_prefix(n);
  }
  prefix.rest = rest;
  return prefix;
}

void remove_ansi(std::string_view text, std::string& out) {
  out.clear();
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    if (c == 0x1b) {
      text.remove_prefix(escape_length(text));
    } else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
      text.remove_prefix(1);
    } else if (c == 0xC2 && text.size() > 1 && static_cast<unsigned char>(text[1]) >= 0x80 &&
               static_cast<unsigned char>(text[1]) < 0xA0) {
      // A C1 control character is ESC and a letter in one: U+009B is `ESC [` (CSI), U+009D
      // `ESC ]` (OSC); what follows it is removed as after its two-byte form.
      std::string two{'\x1b', static_cast<char>(static_cast<unsigned char>(text[1]) - 0x40)};
      text.remove_prefix(2);
      const std::size_t rest = std::min(text.size(), std::size_t{4096});
      const std::string sequence = two + std::string(text.substr(0, rest));
      text.remove_prefix(escape_length(sequence) - 2);
    } else {
      out.push_back(text.front());
      text.remove_prefix(1);
    }
  }
}

}  // namespace bigmac::logs
