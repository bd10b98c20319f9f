#include "baseline/replica_sync.h"

#include <map>

namespace bigmac::baseline {
namespace {

enum class Wanted { kEqual, kDistinct };

template <class Get>
ReplicaScan scan(const std::vector<const logs::RankLog*>& replicas, Get get, Wanted wanted) {
  // step -> every replica's digest at it, in rank order
  std::map<std::int64_t, std::vector<RankDigest>> by_step;
  for (const logs::RankLog* log : replicas) {
    for (const logs::RankLog::StepDigests& d : log->step_digests) {
      if (const std::optional<std::uint64_t> v = get(d)) {
        by_step[d.step].push_back(RankDigest{log->rank, *v, d.at});
      }
    }
  }
  ReplicaScan out;
  for (const auto& [step, digests] : by_step) {
    if (digests.size() < 2) continue;
    ++out.steps_compared;
    for (std::size_t i = 1; i < digests.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        const bool equal = digests[i].digest == digests[j].digest;
        if (equal == (wanted == Wanted::kEqual)) continue;
        if (wanted == Wanted::kEqual && j > 0) continue;  // against the first replica only
        out.first = ReplicaPair{step, digests[j], digests[i]};
        return out;
      }
    }
  }
  return out;
}

}  // namespace

ReplicaScan scan_params_in_sync(const std::vector<const logs::RankLog*>& replicas) {
  return scan(
      replicas, [](const logs::RankLog::StepDigests& d) { return d.param; }, Wanted::kEqual);
}

ReplicaScan scan_duplicate_inputs(const std::vector<const logs::RankLog*>& replicas) {
  return scan(
      replicas, [](const logs::RankLog::StepDigests& d) { return d.input; }, Wanted::kDistinct);
}

}  // namespace bigmac::baseline
