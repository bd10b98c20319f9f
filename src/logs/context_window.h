#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "logs/record.h"

namespace bigmac::logs {

/// The non-record lines worth keeping for diagnosis, in bounded memory: the first `head` lines
/// (how the run started) and the last `tail` (how it ended: the traceback), with a count of
/// those dropped in between.
class ContextWindow {
 public:
  explicit ContextWindow(std::size_t head = 50, std::size_t tail = 200);

  void add(TextLine line);
  /// The kept lines in arrival order: head first, then tail.
  std::vector<TextLine> lines() const;
  std::int64_t seen() const { return seen_; }
  std::int64_t dropped() const {
    return seen_ - static_cast<std::int64_t>(head_.size() + tail_.size());
  }

 private:
  std::size_t head_limit_;
  std::size_t tail_limit_;
  std::vector<TextLine> head_;
  std::deque<TextLine> tail_;
  std::int64_t seen_ = 0;
};

}  // namespace bigmac::logs
