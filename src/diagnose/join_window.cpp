#include "diagnose/join_window.h"

#include <algorithm>

namespace bigmac::diagnose {

void JoinWindow::Stream::add(const logs::TextLine& line, std::int64_t seen) {
  Kept& k = lines[static_cast<std::size_t>(next)];
  next = (next + 1) % kTailLines;
  count = std::min(count + 1, kTailLines);
  k.line = line.at.line;
  k.seen = seen;
  k.rank = line.at.rank;
  k.t = line.at.t;
  k.text.assign(line.text);
}

void JoinWindow::reset() {
  by_rank_.clear();
  file_ = Stream{};
  seen_ = 0;
  window_.clear();
  pieces_.clear();
  current_ = nullptr;
}

std::size_t JoinWindow::continued(const logs::TextLine& line, const Kept* out[kTailLines]) const {
  const Kept* found[kTailLines] = {};
  std::size_t n = 0;
  std::size_t bytes = 0;
  std::int64_t next_line = line.at.line;
  std::int64_t next_seen = seen_;
  if (line.at.rank < 0) {
    // A line without a rank continues the lines right before it, whoever wrote them.
    for (int back = 0; back < file_.count && bytes < kTailBytes; ++back) {
      const Kept& k = file_.newest(back);
      if (k.line + 1 != next_line) break;
      found[n++] = &k;
      bytes += k.text.size();
      next_line = k.line;
    }
  } else if (auto it = by_rank_.find(line.at.rank); it != by_rank_.end()) {
    // Lines of other ranks may come between two lines of this rank (every line in between was
    // a text line of the file), a record may not: it ends the message.
    for (int back = 0; back < it->second.count && bytes < kTailBytes; ++back) {
      const Kept& k = it->second.newest(back);
      const std::int64_t gap = next_line - k.line;
      if (gap < 1 || gap > kMaxGap || gap != next_seen - k.seen) break;
      found[n++] = &k;
      bytes += k.text.size();
      next_line = k.line;
      next_seen = k.seen;
    }
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = found[n - 1 - i];
  return n;
}

void JoinWindow::open(const logs::TextLine& line) {
  current_ = &line;
  const Kept* earlier[kTailLines] = {};
  const std::size_t n = continued(line, earlier);

  window_.clear();
  pieces_.clear();
  std::size_t tail = 0;
  for (std::size_t i = 0; i < n; ++i) tail += earlier[i]->text.size();
  std::size_t skip = tail > kTailBytes ? tail - kTailBytes : 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& text = earlier[i]->text;
    const std::size_t from = std::min(skip, text.size());
    skip -= from;
    if (from == text.size()) continue;  // entirely before the tail
    pieces_.push_back(
        WindowPiece{window_.size(), earlier[i]->line, earlier[i]->rank, earlier[i]->t, &text});
    window_.append(text, from, std::string::npos);
  }
  pieces_.push_back(WindowPiece{window_.size(), line.at.line, line.at.rank, line.at.t, &line.text});
  window_ += line.text;
}

void JoinWindow::commit() {
  if (current_ == nullptr) return;
  const logs::TextLine& line = *current_;
  current_ = nullptr;
  if (line.at.rank >= 0) {
    if (by_rank_.size() >= kMaxStreams && by_rank_.count(line.at.rank) == 0) by_rank_.clear();
    by_rank_[line.at.rank].add(line, seen_);
  }
  file_.add(line, seen_);
  ++seen_;
}

std::size_t JoinWindow::piece_at(std::size_t pos) const {
  std::size_t i = pieces_.size() - 1;
  while (i > 0 && pieces_[i].begin > pos) --i;
  return i;
}

}  // namespace bigmac::diagnose
