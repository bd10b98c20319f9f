#include "report/line_printer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

namespace bigmac::report {

LinePrinter::LinePrinter(std::ostream& out, bool smart, int columns)
    : out_(out), smart_(smart), columns_(columns > 0 ? columns : 80) {}

LinePrinter LinePrinter::for_stdout(bool ci) {
  const char* term = std::getenv("TERM");
  const bool smart = !ci && isatty(STDOUT_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
  int columns = 80;
  winsize size{};
  if (smart && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    columns = size.ws_col;
  return LinePrinter(std::cout, smart, columns);
}

void LinePrinter::print(std::string_view line) {
  if (!smart_) {
    out_ << line << '\n' << std::flush;
    return;
  }
  // Cut to one column less than the width so the terminal never wraps (a wrap breaks \r).
  out_ << '\r' << elide_middle(line, columns_ - 1) << "\x1b[K" << std::flush;
  status_pending_ = true;
}

void LinePrinter::print_on_new_line(std::string_view text) {
  finish();
  out_ << text;
  if (!text.empty() && text.back() != '\n') out_ << '\n';
  out_ << std::flush;
}

void LinePrinter::finish() {
  if (status_pending_) out_ << '\n' << std::flush;
  status_pending_ = false;
}

std::string elide_middle(std::string_view text, int columns) {
  std::vector<std::size_t> starts;  // byte offset of each UTF-8 character
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const auto count = static_cast<int>(starts.size());
  if (count <= columns) return std::string(text);
  if (columns < 5)
    return std::string(text.substr(0, columns > 0 ? starts[static_cast<std::size_t>(columns)] : 0));
  const int keep = columns - 3;
  const int head = keep / 2 + keep % 2, tail = keep / 2;
  return std::string(text.substr(0, starts[static_cast<std::size_t>(head)])) + "..." +
         std::string(text.substr(starts[static_cast<std::size_t>(count - tail)]));
}

}  // namespace bigmac::report
