#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::launch {

/// Picks the line that best says why a rank failed from its stderr, as lines arrive: an
/// exception line (`RuntimeError: ...`, the last line of a Python traceback) beats a line
/// mentioning error/fatal/abort, which beats the last line seen. It also keeps the last few
/// non-empty lines, the context a verdict quotes. Memory stays bounded.
class ErrorLine {
 public:
  /// How many of the last lines are kept.
  static constexpr std::size_t kKeptLines = 6;

  void add(std::string_view line);
  /// The chosen line; empty when nothing was seen.
  std::string best() const;
  /// The last kKeptLines non-empty lines, oldest first.
  std::vector<std::string> last_lines() const { return {last_.begin(), last_.end()}; }

 private:
  std::string exception_;
  std::string mention_;
  std::deque<std::string> last_;
};

}  // namespace bigmac::launch
