#pragma once

#include <string>
#include <string_view>

namespace bigmac::launch {

/// Picks the line that best says why a rank failed from its stderr, as lines arrive: an
/// exception line (`RuntimeError: ...`, the last line of a Python traceback) beats a line
/// mentioning error/fatal/abort, which beats the last line seen. Memory stays bounded.
class ErrorLine {
 public:
  void add(std::string_view line);
  /// The chosen line; empty when nothing was seen.
  std::string best() const;

 private:
  std::string exception_;
  std::string mention_;
  std::string last_;
};

}  // namespace bigmac::launch
