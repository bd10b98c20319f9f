#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bigmac::report {

/// How much a run prints (cargo's and pytest's -q/-v): kQuiet the verdict alone, kNormal one line
/// per gate, the failing gate's card once and the report's path, kVerbose also every check,
/// transition and step milestone.
enum class Verbosity { kQuiet, kNormal, kVerbose };

/// --color: auto colours a terminal unless NO_COLOR is set (https://no-color.org) or TERM is
/// "dumb"; always and never do what they say.
enum class ColorChoice { kAuto, kAlways, kNever };

/// "auto", "always", "never"; nullopt for anything else.
std::optional<ColorChoice> parse_color_choice(std::string_view text);

/// Whether to colour: `terminal` is whether the output is a terminal, `no_color` and `term` the
/// values of NO_COLOR and TERM (nullptr: unset). An empty NO_COLOR counts as unset, as the
/// convention says.
bool use_color(ColorChoice choice, bool terminal, const char* no_color, const char* term);

/// What a word means on screen; each maps to one SGR colour.
enum class Paint { kPass, kFail, kWarn, kDim, kBold };

/// `text` in the colour of `paint` (reset after it) when `on`, else `text` unchanged.
std::string paint(std::string_view text, Paint paint, bool on);

/// The status word a check line or gate line starts with ("ok", "FAIL", "warn", "skip", "passed",
/// "FAILED", ...) painted in its colour; anything else unchanged.
std::string paint_status_word(std::string_view word, bool on);

/// Every line of a verdict listing (`  ok   name  message`, `  FAIL ...`, `  warn ...`, `  skip
/// ...`) with its status word painted; other lines unchanged.
std::string paint_check_lines(std::string_view text, bool on);

}  // namespace bigmac::report
