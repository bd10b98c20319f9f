#pragma once

#include <string>
#include <string_view>

namespace bigmac {

/// Outside text (a file name, a log line, a stage title, a value from a file) made safe to
/// print on a terminal: every control character becomes a visible escape (`\n`, `\r`, `\t`,
/// `\x1b` for ESC and other C0 bytes and DEL, `\u009b` for C1 characters) and every byte of
/// invalid UTF-8 `\xff`, so no escape sequence reaches the terminal and no line break splits a
/// line of a table. Text without any of these is returned as it is.
std::string printable(std::string_view text);

}  // namespace bigmac
