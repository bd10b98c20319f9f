#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>

#include "baseline/logged.h"
#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::baseline {

// The judgements of a pipeline's layout, made once: the gate checks (gates/baseline_checks.cpp,
// shape_checks.cpp) and the diagnosis rules (diagnose/pipeline_rules.cpp) both call these, so a
// check and the rule that explains it see the same stages (issue 29).

// Each takes the ranks' logs in rank order: any span of logs::RankLog or of a type derived from
// it (the gates keep gates::RankEvidence).

/// A stage's layout as one of its replicas logged it.
using StageLayout = Logged<logs::LayoutRecord>;

/// One layout per stage, by stage: the replica with the lowest dp_rank, the first logged of
/// equals.
template <class Log>
std::map<int, StageLayout> stage_layouts(std::span<const Log> logs) {
  std::map<int, StageLayout> out;
  for (const Log& log : logs) {
    for (const logs::LayoutRecord& l : log.layouts) {
      const auto it = out.find(l.stage);
      if (it == out.end() || l.dp_rank < it->second.record->dp_rank) out[l.stage] = {&l, &log};
    }
  }
  return out;
}

/// The stages' parameters with a tied (shared) weight counted once.
struct StageParamSum {
  std::int64_t sum = 0;              ///< every stage's param_count added up
  std::int64_t tied_duplicates = 0;  ///< parameters counted twice: tied weights on two stages
  std::int64_t owned() const { return sum - tied_duplicates; }  ///< each parameter once
};

/// The parameter sum of `stages` (one layout each: stage_layouts), tied weights counted once.
StageParamSum stage_param_sum(const std::map<int, StageLayout>& stages);

/// The last pipeline stage: pp − 1 when the plan says pp (`planned_stages` > 0), else the last
/// the layouts name (their num_stages − 1); nullopt when neither says.
std::optional<int> last_stage(int planned_stages, const std::map<int, StageLayout>& stages);

/// The first loss, in log order, computed on a stage other than `last`: only the last stage
/// holds the head and the labels. Empty when every loss is on the last stage.
template <class Log>
Logged<logs::LossRecord> first_loss_off_last_stage(std::span<const Log> logs, int last) {
  for (const Log& log : logs) {
    const auto it = std::find_if(log.losses.begin(), log.losses.end(),
                                 [&](const logs::LossRecord& l) { return l.stage != last; });
    if (it != log.losses.end()) return {&*it, &log};
  }
  return {};
}

}  // namespace bigmac::baseline
