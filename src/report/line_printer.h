#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace bigmac::report {

/// Prints status lines (ninja's LinePrinter): on a terminal ("smart") each status line
/// overwrites the previous one (carriage return, text cut to the width, erase to end of line);
/// elsewhere, and under --ci, every line is printed in full on its own line so logs stay
/// readable. Output that must stay (verdicts, tables) goes through print_on_new_line.
class LinePrinter {
 public:
  LinePrinter(std::ostream& out, bool smart, int columns = 80);

  /// For standard output: smart when stdout is a terminal, $TERM is not "dumb" and `ci` is off;
  /// the width comes from the terminal.
  static LinePrinter for_stdout(bool ci);

  bool smart() const { return smart_; }

  /// A status line: overprints the last one on a terminal, else a plain line.
  void print(std::string_view line);
  /// Text that stays: ends a pending status line first.
  void print_on_new_line(std::string_view text);
  /// Ends a pending status line (before the program exits or another writer prints).
  void finish();

 private:
  std::ostream& out_;
  bool smart_;
  int columns_;
  bool status_pending_ = false;  ///< the cursor sits at the end of an overprinted line
};

/// `text` cut to `columns` display columns with "..." in the middle, as ninja elides; counts
/// UTF-8 sequences as one column each.
std::string elide_middle(std::string_view text, int columns);

}  // namespace bigmac::report
