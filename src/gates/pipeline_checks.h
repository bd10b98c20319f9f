#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gates/check.h"

namespace bigmac::gates {

/// Checks over the pipeline layout and schedule (`layout` and `mb` events).
/// Every layer 0..num_layers-1 in exactly one stage; replicas of a stage agree.
CheckResult check_layer_coverage(const CheckContext& ctx);
/// Every (stage, micro-batch, phase) exactly once per step, in the schedule's order.
CheckResult check_schedule_order(const CheckContext& ctx);
/// Every stage ran forward and backward for every micro-batch of every step it took part in.
CheckResult check_no_starved_stage(const CheckContext& ctx);

/// The order one stage runs its micro-batches in: ('F'|'B', micro-batch) pairs.
/// 1f1b: min(stages - stage - 1, M) warm-up forwards, then one forward / one backward, then
/// the remaining backwards; gpipe: every forward, then every backward.
std::vector<std::pair<char, int>> schedule_sequence(const std::string& schedule, int stage,
                                                    int stages, int micro_batches);

}  // namespace bigmac::gates
