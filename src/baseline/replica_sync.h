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

/// The first digest step whose first forward read different buffers (BatchNorm statistics) on
/// two of `replicas`: each keeps statistics of its own (DDP's broadcast_buffers off, or no DDP).
ReplicaScan scan_buffers_in_sync(const std::vector<const logs::RankLog*>& replicas);

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

/// One read of a sample: which rank read it, at which step.
struct SampleRead {
  int rank = 0;
  std::int64_t step = 0;
  logs::RecordOrigin at;
};

/// A sample read twice: its hash, its first read and the read again.
struct RepeatedSample {
  std::uint64_t hash = 0;
  SampleRead first, again;
};

/// How the steps of `readers` (the ranks that read a step's input: one per replica of the first
/// stage) cover the baseline's samples, step by step ("every sample once"). A step some reader
/// has not logged a sample set for yet is left out.
struct SampleCoverage {
  /// Why the sets cannot be compared: one row of the readers' first input (all but its first
  /// dimension) has another shape than the baseline's, so that dimension is not the batch (a
  /// sequence-first [seq, batch] input). Then nothing below is filled in.
  std::string not_comparable;
  bool logged = false;              ///< some reader logged a sample set
  std::int64_t steps_logged = 0;    ///< steps with every reader's set
  std::int64_t steps_compared = 0;  ///< of those, steps the baseline has a set for too
  /// The first step whose count is not the baseline's: samples dropped or read twice.
  std::optional<StepSamples> count_differs;
  std::int64_t baseline_count = 0;  ///< the baseline's count at that step
  /// The first step with the baseline's count but other samples: the order depends on the
  /// layout (a sampler that deals samples to ranks, a per-rank seed); -1: none.
  std::int64_t first_other_samples = -1;
  /// Samples read twice. Over the first steps in which the baseline read every sample once
  /// (BaselineStep::sample_repeats is 0) and every reader logged each sample's hash, the
  /// readers must also read each sample once: a sample read again by another rank, or at a
  /// later step, means the ranks do not split the data (each draws from all of it). Up to
  /// `repeats_allowed` (readers - 1) are what DistributedSampler's padding of an epoch adds.
  std::int64_t repeat_steps = 0;  ///< the steps compared so
  std::int64_t repeat_reads = 0;  ///< the samples the readers read over them
  std::int64_t repeats = 0;       ///< of those, samples read before
  std::int64_t repeats_allowed = 0;
  std::optional<RepeatedSample> first_repeat;  ///< the first sample read again
  bool repeated() const { return repeats > repeats_allowed; }
};

SampleCoverage cover_samples(const std::vector<const logs::RankLog*>& readers,
                             const std::vector<BaselineStep>& baseline_steps,
                             const std::vector<std::int64_t>& baseline_shape);

}  // namespace bigmac::baseline
