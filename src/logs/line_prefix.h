#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bigmac::logs {

/// What launchers and loggers put in front of a trainer's own text.
struct LinePrefix {
  int rank = -1;  ///< from `[rank3]:`, `[default3]:` (torchrun) or `3: ` (srun --label)
  double t = 0;   ///< from a leading timestamp, seconds since the epoch (UTC if no zone)
  bool has_time = false;
  std::string_view rest;  ///< the line after the prefixes
};

/// Removes, in any order and nesting, leading ANSI colour codes, blanks, torchrun's
/// `[<role><N>]:` (`[rank3]:`, `[default3]:`), srun's `3: `, and timestamps
/// (`2024-05-01T12:00:00.123Z`, `2024-05-01 12:00:00,123`, either in brackets). With nested
/// rank prefixes the innermost wins: `0: [rank3]: x` is rank 3.
LinePrefix strip_line_prefix(std::string_view line);

/// Whether `text` holds a control character remove_ansi removes: ESC (a colour code), another
/// C0 byte but tab and CR, DEL, or a C1 character (U+0080..U+009F).
inline bool has_escape(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) return true;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0 &&
        static_cast<unsigned char>(text[i + 1]) >= 0x80) {
      return true;
    }
  }
  return false;
}

/// Copies `text` into `out` without ANSI escape sequences (CSI `ESC [ ... final`, OSC
/// `ESC ] ... BEL` and the other string sequences up to BEL or `ESC \`, two-byte `ESC x`) and
/// without the other control characters has_escape names (a BEL or backspace in an error line
/// would keep its signature from matching); tab and CR stay.
void remove_ansi(std::string_view text, std::string& out);

}  // namespace bigmac::logs
