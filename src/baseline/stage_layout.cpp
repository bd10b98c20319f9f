#include "baseline/stage_layout.h"

namespace bigmac::baseline {

StageParamSum stage_param_sum(const std::map<int, StageLayout>& stages) {
  StageParamSum out;
  for (const auto& [stage, layout] : stages) {
    out.sum += layout.record->param_count;
    out.tied_duplicates += layout.record->tied_duplicate_count;
  }
  return out;
}

std::optional<int> last_stage(int planned_stages, const std::map<int, StageLayout>& stages) {
  if (planned_stages > 0) return planned_stages - 1;
  int logged = 0;
  for (const auto& [stage, layout] : stages) logged = std::max(logged, layout.record->num_stages);
  if (logged > 0) return logged - 1;
  return std::nullopt;
}

}  // namespace bigmac::baseline
