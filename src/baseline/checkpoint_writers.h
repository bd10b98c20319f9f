#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "baseline/logged.h"
#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::baseline {

// Who wrote the run's checkpoints, judged once: the gate check `single_checkpoint_writer`
// (gates/process_checks.cpp) and the diagnosis rule `multiple_checkpoint_writers`
// (diagnose/pipeline_rules.cpp) both call it (issue 29).

/// The ranks that wrote checkpoints, in rank order, one entry per rank (its log's rank; of a
/// rank with two logs the first), each with the first checkpoint it logged. `Log` is
/// logs::RankLog or a type derived from it.
template <class Log>
std::vector<Logged<logs::CheckpointRecord>> checkpoint_writers(std::span<const Log> logs) {
  std::vector<Logged<logs::CheckpointRecord>> out;
  for (const Log& log : logs) {
    if (log.checkpoints.empty()) continue;
    bool seen = false;
    for (const auto& w : out) seen = seen || w.log->rank == log.rank;
    if (!seen) out.push_back({&log.checkpoints.front(), &log});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.log->rank < b.log->rank; });
  return out;
}

}  // namespace bigmac::baseline
