#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

#include "trainer/fault_plan.h"
#include "trainer/rank_group.h"

namespace bigmac::trainer {

/// Where a rank sits, as far as the faults care.
struct RankPosition {
  int rank = 0;
  int stage = 0;   ///< pipeline stage
  int stages = 1;  ///< pp
  int world_size = 1;
};

/// The one seam through which the faults of a FaultPlan act on the training loop. The loop
/// and the pipeline stage call each hook at its point whatever the plan; a hook whose fault is
/// off returns its input unchanged (or does nothing), so the loop holds no branch on a fault.
/// Faults that act before training (world_size_offset, master_port_offset, split_out_of_range)
/// are applied to the setup in trainer_main.cpp.
class FaultInjector {
 public:
  FaultInjector(FaultPlan plan, RankPosition at) : plan_(std::move(plan)), at_(at) {}

  /// Before the process group forms: `hang_rank = "R:-1"` blocks rank R here.
  void before_rendezvous() const;
  /// At the start of every step: crash_rank aborts, hang_rank and stage_stall block.
  void at_step_start(int step) const;
  /// The learning rate a step uses (lr_scale_by_world multiplies it by the world size).
  double learning_rate(double lr) const;
  /// Samples in micro-batch `mb` of a step of `micro_batches` (ragged_microbatch: the last is
  /// one sample short, unpadded).
  std::int64_t micro_batch_samples(int mb, int micro_batches, std::int64_t micro) const;
  /// The logits of a step's forward pass (nan_at_step: a real NaN that reaches the gradients
  /// and, through the update, every later step).
  at::Tensor logits(at::Tensor logits, int step) const;
  /// The gradients of a step after the all-reduce (grad_blowup scales them by blowup^step).
  void gradients(const std::vector<at::Tensor>& params, int step) const;
  /// Just before the step's world all-reduce (extra_collective: this rank calls a barrier
  /// first, which no other rank calls: the ranks' collectives part there).
  void before_world_reduce(RankGroup& group, int step) const;
  /// What the step's world all-reduce sums (collective_shape: one element more on this rank).
  void world_reduce_inputs(std::vector<at::Tensor>& reduced, int step) const;
  /// Whether the copies of the tied embedding are synchronised (untied_sync: they are not).
  bool synchronises_tied_weights() const { return !plan_.untied_sync; }
  /// How often a step's `step` line is written: 1; 0 for skip_step_log; 2 for dup_step_log.
  int step_log_copies(int step) const;
  /// Whether this rank writes checkpoints: rank 0, or every rank with all_ranks_checkpoint.
  bool writes_checkpoints() const { return at_.rank == 0 || plan_.all_ranks_checkpoint; }
  /// What the first pipeline stage sends on (boundary_seq_trim drops positions,
  /// boundary_dtype casts it).
  at::Tensor outgoing_activation(at::Tensor hidden) const;
  /// The data-parallel rank whose samples this replica reads (unsharded_data: replica 0's).
  int data_rank(int dp_rank) const { return plan_.unsharded_data ? 0 : dp_rank; }
  /// Whether the replicas' gradients are all-reduced (unreduced_grads: never).
  bool reduces_gradients() const { return !plan_.unreduced_grads; }
  /// The seed the model is initialised from (rank_seeded_init: seed + the dp rank, and
  /// nothing broadcasts the result).
  std::uint64_t init_seed(std::uint64_t seed, int dp_rank) const {
    return plan_.rank_seeded_init ? seed + static_cast<std::uint64_t>(dp_rank) : seed;
  }
  /// How many replicas' gradients are averaged (summed_grads: 1, so the sum is applied).
  int replicas_averaged(int dp) const { return plan_.summed_grads ? 1 : dp; }
  /// Whether this stage computes a loss although it is not the last (middle_stage_loss).
  bool computes_stray_loss() const { return plan_.middle_stage_loss && at_.stage + 1 < at_.stages; }

 private:
  FaultPlan plan_;
  RankPosition at_;
};

}  // namespace bigmac::trainer
