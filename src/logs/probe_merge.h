#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "logs/rank_log.h"

namespace bigmac::logs {

/// How many values of one field a merged rank log took from the trainer's own lines and how
/// many from the probe (docs/probe.md).
struct FieldSource {
  std::int64_t trainer = 0;
  std::int64_t probe = 0;

  /// "trainer", "probe", or "trainer (18), probe (2)" when both gave values.
  std::string describe() const;
};

/// By field: `loss`, `grad_norm`, `lr`, `samples_per_step`, `step_ms` (counted per step),
/// `run`, `pg_ready`, `done`, `input_shape`, `param_count`, `param_digest`, `checkpoints`,
/// `shapes`, `heartbeats`, `layouts`, `micro_batches`, `stage_losses` (counted per record).
using FieldSources = std::map<std::string, FieldSource>;

/// One rank's records with the probe's filled in: the trainer's lines and the probe's events
/// are merged by step, and where both give a field the trainer's own value wins (it is what
/// the program computed; the probe only observes). A step only the probe logged is added, so
/// a trainer that prints every tenth step still has every step. One-off events (`run`,
/// `batch`, `model`, ...) keep the trainer's record with its empty fields filled from the
/// probe's; events the trainer never wrote come from the probe. The result's `field_sources`
/// says per field where its values came from (FieldSource::describe).
///
/// The probe cannot name the batch arithmetic, but it measures its parts: the first
/// dimension of the model's first input (the micro-batch, for batch-first models), the
/// backward() calls of each step (`loss_count`: the accumulation, or the micro-batches of a
/// pipeline's last stage) and the world size. With `model_parallel` = pp × tp of the launch,
/// samples/step = input_shape[0] × loss_count × world_size / model_parallel is derived per
/// step and in a `batch` record, and named as derived in `field_sources`.
struct ProbeMerge {
  int model_parallel = 1;  ///< pp × tp of the launch
  /// Data-parallel replicas of the launch. A rank's probe `loss` is its own micro-batches'
  /// and its `grad_norm` its stage's, so they fill the trainer's steps only with one replica
  /// of one stage; `lr` always.
  int data_parallel = 1;
  /// Another rank of the trainer logs steps itself: it owns the loss, and the probe's steps of
  /// this rank (which logs none) stay out, as do the probe's `shape` events (they carry no
  /// stage; the trainer's own layout is the one the checks read).
  bool steps_logged_elsewhere = false;
};
RankLog merge_probe_log(RankLog trainer, RankLog probe, const ProbeMerge& how = {});

/// Pure data parallelism measured by the probe alone: each rank's `loss` is its own
/// micro-batches'; the run's loss, which the baseline holds, is their mean over the replicas
/// (docs/probe.md, "Combining ranks"). Replaces the loss of each step of `merged` that every
/// one of the `expected` replicas logged (`replicas` are those seen so far), and says so in its
/// field_sources; a step that not all of them logged yet has no loss (one replica's own is not
/// the run's). Returns how many steps got the mean.
std::int64_t average_replica_losses(RankLog& merged, const std::vector<const RankLog*>& replicas,
                                    std::size_t expected);

/// A pipeline measured by the probe alone: how its ranks' values add up to the run's.
struct StageCombination {
  std::size_t ranks = 0;     ///< every rank of the launch (pp × tp × dp)
  std::size_t replicas = 1;  ///< dp: the ranks of the last stage that each log a loss
  /// Whether the ranks' squared norms add up to the model's: tp 1 and no parameter held by two
  /// stages (a tied embedding and head would be counted twice). When false, the run's
  /// grad_norm is absent and `grad_norm_unknown` says why.
  bool grad_norm = false;
  std::string grad_norm_unknown;
};

/// The run's loss and grad_norm of a pipeline from the probe's per-rank values (docs/probe.md,
/// "Combining ranks"): the loss is the mean over the replicas of the ranks that logged one (the
/// last stage; exactly `replicas` of them, else absent), the grad_norm √(Σ grad_norm_sq / dp)
/// over every rank once all `ranks` logged the step. Replaces those of each step of `owner`
/// (`ranks` are the probe logs seen so far), says so in its field_sources, and returns how
/// many steps got a combined loss.
std::int64_t combine_stage_values(RankLog& owner, const std::vector<const RankLog*>& ranks,
                                  const StageCombination& how);

/// A pipeline measured by the probe alone: the whole model and the run's batch arithmetic, which
/// every rank's `model` and `batch` must say (docs/log-contract.md), from each rank's own part
/// (docs/pipelines.md). `rank` gets them once all `how.ranks` logged their part, else has none
/// (a part is not the whole):
/// - model: param_count = the ranks' parameters summed / replicas (a weight held by two stages
///   counted on each), param_digest = a digest of the stages' digests in stage order (one
///   replica each);
/// - batch: the first stage's input (shape, dtype), micro-batch = its first dimension,
///   accumulation = the backward() calls of a step on the last stage (its micro-batches, the
///   same on every step, at least two steps seen), dp = replicas; and that samples/step on
///   each of `rank`'s steps that lacks one.
void combine_stage_structure(RankLog& rank, const std::vector<const RankLog*>& ranks,
                             const StageCombination& how);

/// A hand-written pipeline's stages (docs/pipelines.md): a rank's probe knows its neighbours
/// (`layout` prev_rank, next_rank) but its stage only at the head of the chain. Counts `probe`'s
/// stage along the prev links of every rank's probe log (`all`, by rank) and the stage count to
/// the chain's tail, and gives that stage to its `layout`, `loss`, `mb` and `shape` events that
/// have none (-1), the count to its layouts without one (0; the head's too). A chain with a rank
/// not yet logged, or a loop, is left as it is; a layout without neighbours is not a chain's.
void resolve_chain_stages(RankLog& probe, const std::map<int, RankLog>& all);

}  // namespace bigmac::logs
