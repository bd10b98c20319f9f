#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
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

/// The samples one step consumed over the ranks that read input, summed (sample sets add up).
struct StepSamples {
  std::int64_t step = 0;
  std::int64_t count = 0;
  std::uint64_t digest = 0;
  std::vector<std::pair<int, std::int64_t>> per_rank;  ///< (rank, its samples), in rank order
  logs::RecordOrigin at;                               ///< the first reader's record of it
};

/// Each step that every one of `readers` (the ranks that read a step's input: one per replica of
/// the first stage) logged a sample set for; a step some reader has not logged yet is left out.
std::vector<StepSamples> step_samples(const std::vector<const logs::RankLog*>& readers);

/// Why the samples of a sample set (the rows along the input's first dimension) cannot be
/// compared with the baseline's: the shape of one row of the readers' first input differs from
/// the baseline's, so the first dimension is not the batch (a sequence-first [seq, batch]
/// input). Empty when they agree, or when a shape is not known.
std::string batch_dim_mismatch(const std::vector<std::int64_t>& baseline_shape,
                               const std::vector<const logs::RankLog*>& readers);

/// Whether any of `ranks` logged a sample set at all.
bool logs_sample_sets(const std::vector<const logs::RankLog*>& ranks);

/// How a run's steps cover the baseline's samples, step by step ("every sample once").
struct SampleCoverage {
  std::int64_t steps_compared = 0;  ///< steps with a sample set in the run and the baseline
  /// The first step whose count is not the baseline's: samples dropped or read twice.
  std::optional<StepSamples> count_differs;
  std::int64_t baseline_count = 0;  ///< the baseline's count at that step
  /// The first step with the baseline's count but other samples: the order depends on the
  /// layout (a sampler that deals samples to ranks, a per-rank seed); -1: none.
  std::int64_t first_other_samples = -1;
};

SampleCoverage compare_samples(const std::vector<StepSamples>& run,
                               const std::vector<BaselineStep>& baseline);

}  // namespace bigmac::baseline
