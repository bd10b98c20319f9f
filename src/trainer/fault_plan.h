#pragma once

#include <optional>
#include <string>

#include "config/config.h"
#include "core/error.h"

namespace bigmac::trainer {

/// `R:K` of a fault: which rank and at which step (or offset).
struct RankAndValue {
  int rank = 0;
  int value = 0;
  bool operator==(const RankAndValue&) const = default;
};

/// The `[faults]` table parsed into what the training loop asks at each point. Every fault
/// produces its real symptom (a real NaN, a real abort, a real hang); none writes a log line
/// the real program would not have written.
struct FaultPlan {
  int nan_at_step = -1;                    ///< loss becomes NaN from this step on (propagates)
  double grad_blowup = 0;                  ///< > 0: gradients scaled by grad_blowup^step
  int skip_step_log = -1;                  ///< this step's `step` line is not written
  int dup_step_log = -1;                   ///< this step's `step` line is written twice
  bool lr_scale_by_world = false;          ///< LR multiplied by world size
  std::optional<RankAndValue> crash_rank;  ///< rank aborts at the start of step value
  std::optional<RankAndValue> hang_rank;   ///< rank blocks at step value; -1: before rendezvous
  int world_size_offset = 0;               ///< every rank is told WORLD_SIZE + offset
  std::optional<RankAndValue> master_port_offset;  ///< rank uses MASTER_PORT + value
  bool all_ranks_checkpoint = false;
  // Pipeline faults (pp > 1). split_out_of_range acts on the split points (trainer_main.cpp).
  int boundary_seq_trim = 0;                ///< stage 0 drops this many positions before sending
  std::string boundary_dtype;               ///< stage 0 casts what it sends: bf16 | float16
  bool ragged_microbatch = false;           ///< the last micro-batch of a step is one sample short
  bool middle_stage_loss = false;           ///< a stage before the last computes (and logs) a loss
  std::optional<RankAndValue> stage_stall;  ///< stage value.rank blocks at step value.value
  bool untied_sync = false;                 ///< the tied embedding's copies are not synchronised
  // Data-parallel faults: each breaks an invariant of every correct data-parallel run.
  bool unsharded_data = false;    ///< every replica reads replica 0's samples
  bool unreduced_grads = false;   ///< gradients stay each replica's own
  bool rank_seeded_init = false;  ///< the model is initialised from seed + the dp rank
  bool summed_grads = false;      ///< gradients summed over the replicas, not averaged
  // Collective faults: the ranks' collectives part.
  std::optional<RankAndValue> extra_collective;  ///< rank calls a barrier the others do not
  std::optional<RankAndValue> collective_shape;  ///< rank's end-of-step all-reduce is longer

  bool crashes(int rank, int step) const { return hits(crash_rank, rank, step); }
  bool hangs(int rank, int step) const { return hits(hang_rank, rank, step); }
  bool stalls(int stage, int step) const { return hits(stage_stall, stage, step); }
  bool calls_extra_barrier(int rank, int step) const { return hits(extra_collective, rank, step); }
  bool lengthens_reduce(int rank, int step) const { return hits(collective_shape, rank, step); }
  int port_offset_for(int rank) const {
    return master_port_offset && master_port_offset->rank == rank ? master_port_offset->value : 0;
  }

 private:
  static bool hits(const std::optional<RankAndValue>& fault, int rank, int step) {
    return fault && fault->rank == rank && fault->value == step;
  }
};

/// Parses the `R:K` strings; errors name the key (`faults.crash_rank`) and the text found.
Expected<FaultPlan> parse_fault_plan(const config::FaultsConfig& faults);

/// Parses `R:K` (both integers, R >= 0).
Expected<RankAndValue> parse_rank_and_value(std::string_view text, std::string_view key);

}  // namespace bigmac::trainer
