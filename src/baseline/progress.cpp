#include "baseline/progress.h"

#include <algorithm>

namespace bigmac::baseline {

std::vector<WorkSign> signs_of_work(const logs::RankLog& log) {
  std::vector<WorkSign> signs;
  signs.reserve(log.heartbeats.size() + log.steps.size() + 2 * log.micro_batches.size());
  for (const logs::HeartbeatRecord& h : log.heartbeats) signs.push_back({h.at.t, h.at.line});
  for (const logs::StepRecord& s : log.steps) signs.push_back({s.at.t, s.at.line});
  for (const logs::MicroBatchRecord& m : log.micro_batches) {
    signs.push_back({m.start, m.at.line});
    signs.push_back({m.end > 0 ? m.end : m.at.t, m.at.line});
  }
  std::erase_if(signs, [](const WorkSign& s) { return s.t <= 0; });
  std::stable_sort(signs.begin(), signs.end(),
                   [](const WorkSign& a, const WorkSign& b) { return a.t < b.t; });
  return signs;
}

std::optional<IdleGap> longest_idle(std::span<const WorkSign> signs) {
  std::optional<IdleGap> longest;
  for (std::size_t i = 1; i < signs.size(); ++i) {
    const IdleGap gap{signs[i - 1], signs[i]};
    if (!longest || gap.seconds() > longest->seconds()) longest = gap;
  }
  return longest;
}

}  // namespace bigmac::baseline
