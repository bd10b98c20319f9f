#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bigmac::report {

/// Text made safe for XML and HTML content and attribute values: & < > " ' become entities,
/// and control characters XML 1.0 forbids (everything below 0x20 but tab, LF, CR) become '?',
/// so a NUL or an ANSI colour code from a rank's stderr cannot break junit.xml; invalid UTF-8
/// bytes become U+FFFD.
std::string escape_xml(std::string_view text);

/// Text made safe for one Markdown table cell: '|' escaped, newlines as spaces, HTML escaped.
std::string escape_markdown_cell(std::string_view text);

/// Text as one Markdown code span, shown exactly as it is and never read as Markdown or HTML,
/// whatever it holds: the fence is one backtick longer than any run of backticks inside, line
/// breaks and control characters become spaces (a line break would end a heading and let the
/// rest be read as HTML), invalid UTF-8 becomes U+FFFD, and in a table cell `|` is escaped.
std::string markdown_code(std::string_view text, bool in_table = false);

/// Lines as one fenced Markdown code block (```text), its fence longer than any run of backticks
/// in the lines, so no line can close it early.
std::string markdown_code_block(const std::vector<std::string>& lines);

/// A metric value for people: 6 significant digits, "NaN"/"inf" for non-finite values.
std::string format_value(double value);

/// A relative difference for people: 3 significant digits ("0.0127", "1.2e-07"), "inf".
std::string format_relative(double value);

/// A duration for people: "0.8 s", "12.3 s", "2 m 05 s", "1 h 02 m"; "–" when unknown (<= 0).
std::string format_duration(double seconds);

}  // namespace bigmac::report
