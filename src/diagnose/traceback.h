#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "logs/record.h"

namespace bigmac::diagnose {

/// One exception a Python traceback in a log ends with.
struct RaisedError {
  int rank = -1;          ///< the rank whose lines the traceback was in; -1: none named
  std::size_t file = 0;   ///< index of the file (in the order the reader was given files)
  std::int64_t line = 0;  ///< the line of `Type: message`
  double t = 0;           ///< its wall time, 0 when the line had none
  std::string type;       ///< `RuntimeError`, `torch.distributed.DistBackendError`
  std::string message;    ///< the message's first line (may be empty: `KeyboardInterrupt`)
  /// The innermost frame of the program itself (outside installed packages and Python's own
  /// library), `train.py:88 in main`; empty when every frame was a library's.
  std::string program_frame;
  /// The innermost frame of all, where it was raised: `torch/serialization.py:1040 in load`
  /// (a library's path from its package on).
  std::string raised_in;
  /// The exception of the traceback before, on the same rank, when this one was raised while
  /// handling it (`During handling of the above exception`) or from it (`The above exception
  /// was the direct cause`); -1 when none. The first of a chain is its root.
  int chained_from = -1;
  bool direct_cause = false;  ///< `raise ... from`, rather than an error while handling one

  /// `train.py:88 in main`, else where it was raised.
  const std::string& where() const { return program_frame.empty() ? raised_in : program_frame; }
};

/// Reads the structure of Python tracebacks as a log's lines pass: each traceback's frames,
/// the exception it ends with and how it chains to the one before. Lines of several ranks may
/// interleave (a rank's prefix names it): each rank's traceback is read on its own. Bounded: the
/// first kMaxErrors exceptions are kept, the rest counted.
class TracebackReader {
 public:
  static constexpr std::size_t kMaxErrors = 256;

  /// Starts the next file (index `file`); a traceback does not continue across files.
  void begin_file(std::size_t file);
  void read(const logs::TextLine& line);

  const std::vector<RaisedError>& errors() const { return errors_; }
  /// Exceptions read beyond kMaxErrors.
  std::int64_t dropped() const { return dropped_; }

  /// The exception whose `Type: message` line is `line` of `file`; nullptr when none.
  const RaisedError* at(std::size_t file, std::int64_t line) const;
  /// The first exception of the chain `error` belongs to (itself when it was not chained).
  const RaisedError& root_of(const RaisedError& error) const;

 private:
  enum class Phase { kNone, kFrames, kAfterError };
  struct Open {
    int rank = -1;
    Phase phase = Phase::kNone;
    std::string program_frame;
    std::string innermost;
    bool source_next = false;  ///< the line after a frame is its source
    int last = -1;             ///< the rank's latest exception
    int chain_to = -1;         ///< the exception a chain marker after it pointed at
    bool direct = false;
  };
  Open& open_for(int rank);
  void finish_error(Open& open, const logs::TextLine& line, std::string_view type,
                    std::string_view message);

  std::size_t file_ = 0;
  std::vector<Open> open_;  ///< per rank seen, few
  std::vector<RaisedError> errors_;
  std::int64_t dropped_ = 0;
};

/// A frame's path as it should be shown: an installed package's from the package on
/// (`torch/serialization.py`), any other path as printed.
std::string_view shown_path(std::string_view path);

/// Whether a frame's path is the program's own (not under site-packages, dist-packages or
/// Python's own library).
bool program_path(std::string_view path);

}  // namespace bigmac::diagnose
