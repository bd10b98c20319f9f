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

/// Whether `text` holds an ESC byte (a colour code somewhere in it).
inline bool has_escape(std::string_view text) {
  return text.find('\x1b') != std::string_view::npos;
}

/// Copies `text` into `out` without ANSI escape sequences (CSI `ESC [ ... final` and two-byte
/// `ESC x`).
void remove_ansi(std::string_view text, std::string& out);

}  // namespace bigmac::logs
