#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "logs/record.h"

namespace bigmac::diagnose {

/// One line inside a JoinWindow.
struct WindowPiece {
  std::size_t begin = 0;  ///< offset of the line in the window text
  std::int64_t line = 0;  ///< 1-based line number in its file
  int rank = -1;
  double t = 0;
  const std::string* text = nullptr;  ///< the whole line (valid until commit())
};

/// The last lines of each stream of one file, joined with each new line so that a message broken
/// over several lines is searched as one. A stream is one rank's lines (lines of other ranks may
/// come between them, records may not); a line without a rank continues only the lines right
/// before it. Earlier lines contribute at most kTailBytes, so a window is bounded and the scan
/// stays linear in the log.
class JoinWindow {
 public:
  static constexpr std::size_t kTailBytes = 256;
  static constexpr int kTailLines = 6;        ///< earlier lines a window may reach back to
  static constexpr std::int64_t kMaxGap = 8;  ///< lines from one line of a rank to its next
  static constexpr std::size_t kMaxStreams = 1 << 16;

  /// Starts a new file: nothing joins across files.
  void reset();

  /// Builds the window for `line`: the tail of the earlier lines of its stream that it
  /// continues, then the whole line. `line` must outlive the window; the pieces stay valid until
  /// commit().
  void open(const logs::TextLine& line);
  /// Remembers the line of the last open() for the lines after it.
  void commit();

  std::string_view text() const { return window_; }
  /// Where the new line starts in text(); 0 when nothing was joined.
  std::size_t seam() const { return pieces_.back().begin; }
  /// The lines of the window, oldest first; the last is the new line.
  const std::vector<WindowPiece>& pieces() const { return pieces_; }
  /// Index into pieces() of the line holding offset `pos` of text().
  std::size_t piece_at(std::size_t pos) const;

 private:
  struct Kept {
    std::int64_t line = 0;
    std::int64_t seen = 0;  ///< text lines of the file read before this one
    int rank = -1;
    double t = 0;
    std::string text;
  };
  /// The last kTailLines lines of a stream (a ring).
  struct Stream {
    std::array<Kept, kTailLines> lines;
    int count = 0;
    int next = 0;  ///< slot the next line goes to
    void add(const logs::TextLine& line, std::int64_t seen);
    /// `back` = 0 is the newest line.
    const Kept& newest(int back) const {
      return lines[static_cast<std::size_t>((next - 1 - back + 2 * kTailLines) % kTailLines)];
    }
  };

  // Earlier lines of `line`'s stream that it continues, oldest first; their text together is
  // at least kTailBytes or they are all there are.
  std::size_t continued(const logs::TextLine& line, const Kept* out[kTailLines]) const;

  std::unordered_map<int, Stream> by_rank_;
  Stream file_;            ///< the file's last lines, any rank
  std::int64_t seen_ = 0;  ///< text lines of this file so far
  std::string window_;
  std::vector<WindowPiece> pieces_;
  const logs::TextLine* current_ = nullptr;  ///< the line of the last open()
};

}  // namespace bigmac::diagnose
