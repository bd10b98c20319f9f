#include "logs/context_window.h"

namespace bigmac::logs {

ContextWindow::ContextWindow(std::size_t head, std::size_t tail)
    : head_limit_(head), tail_limit_(tail) {}

void ContextWindow::add(TextLine line) {
  ++seen_;
  if (head_.size() < head_limit_) {
    head_.push_back(std::move(line));
    return;
  }
  if (tail_limit_ == 0) return;
  if (tail_.size() == tail_limit_) tail_.pop_front();
  tail_.push_back(std::move(line));
}

std::vector<TextLine> ContextWindow::lines() const {
  std::vector<TextLine> all(head_.begin(), head_.end());
  all.insert(all.end(), tail_.begin(), tail_.end());
  return all;
}

}  // namespace bigmac::logs
