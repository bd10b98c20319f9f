#include "trainer/pipeline_schedule.h"

#include <algorithm>

namespace bigmac::trainer {

std::vector<PipeAction> pipeline_schedule(std::string_view schedule, int stage, int stages,
                                          int micro_batches) {
  using Phase = PipeAction::Phase;
  std::vector<PipeAction> actions;
  if (schedule == "gpipe") {
    for (int mb = 0; mb < micro_batches; ++mb) actions.push_back({Phase::kForward, mb});
    for (int mb = 0; mb < micro_batches; ++mb) actions.push_back({Phase::kBackward, mb});
  } else if (schedule == "1f1b") {
    const int warmup = std::clamp(stages - stage - 1, 0, micro_batches);
    int forward = 0;
    int backward = 0;
    while (forward < warmup) actions.push_back({Phase::kForward, forward++});
    while (forward < micro_batches) {
      actions.push_back({Phase::kForward, forward++});
      actions.push_back({Phase::kBackward, backward++});
    }
    while (backward < micro_batches) actions.push_back({Phase::kBackward, backward++});
  }
  return actions;
}

}  // namespace bigmac::trainer
