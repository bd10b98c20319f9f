#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "logs/rank_log.h"

namespace bigmac::baseline {

// The invariants every correct data-parallel run keeps whatever its data order, judged once
// here for the gate checks (replicas_in_sync, no_duplicate_samples) and the diagnosis alike,
// from each rank's own digests (logs::RankLog::step_digests, written by the probe).

/// One rank's digest at one step.
struct RankDigest {
  int rank = 0;
  std::uint64_t digest = 0;
  logs::RecordOrigin at;
};

/// Two replicas at one step: holding different parameters, or having read the same micro-batch.
struct ReplicaPair {
  std::int64_t step = 0;
  RankDigest a, b;
};

/// The first such pair, and how many steps had a digest on at least two replicas.
struct ReplicaScan {
  std::optional<ReplicaPair> first;
  std::int64_t steps_compared = 0;
};

/// The first step after whose update two of `replicas` (the data-parallel copies of one stage)
/// hold different parameters: their gradients were not averaged alike, or they started apart.
ReplicaScan scan_params_in_sync(const std::vector<const logs::RankLog*>& replicas);

/// The first step at which two of `replicas` consumed the same first micro-batch: the data is
/// not sharded (every replica reads the same samples).
ReplicaScan scan_duplicate_inputs(const std::vector<const logs::RankLog*>& replicas);

}  // namespace bigmac::baseline
