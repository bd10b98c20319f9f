#pragma once

#include <string_view>
#include <vector>

namespace bigmac::trainer {

/// Forward or backward of one micro-batch on one stage.
struct PipeAction {
  enum class Phase { kForward, kBackward };
  Phase phase = Phase::kForward;
  int mb = 0;
  bool operator==(const PipeAction&) const = default;
};

/// The order in which `stage` of `stages` runs the forwards and backwards of `micro_batches`
/// micro-batches in one step:
///  - `gpipe`: every forward, then every backward (micro-batch order);
///  - `1f1b`: stages - stage - 1 warm-up forwards, then one forward / one backward alternately,
///    then the remaining backwards.
/// Backwards run in micro-batch order in both, so gradients accumulate in the same order as in a
/// single process. Unknown schedule names give an empty list (checked by the caller).
std::vector<PipeAction> pipeline_schedule(std::string_view schedule, int stage, int stages,
                                          int micro_batches);

}  // namespace bigmac::trainer
