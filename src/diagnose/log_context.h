#pragma once

#include <re2/stringpiece.h>

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "logs/record.h"

namespace bigmac::diagnose {

/// What a log shows of how its program ran, read from its lines as they pass (and, for a gate's
/// own run, from the layout the gate planned). A signature's cause and fix may depend on it
/// (`[[signature.when]]` in stages/diagnoses.toml): a shape error is a pipeline cut only where
/// there are stages, a device index error is a rank-to-GPU mapping only where there are ranks,
/// a launcher's fix only for the launcher in use.
struct LogContext {
  std::set<int> ranks;   ///< ranks the lines came from (their prefixes, the rank's own log)
  int world_size = 0;    ///< the largest the log or the layout names (--nproc_per_node, WORLD_SIZE)
  std::string launcher;  ///< torchrun | accelerate | deepspeed | slurm | mpirun; empty: none seen
  /// The world size the gate's own layout planned (0: not known, a log read on its own).
  int known_world_size = 0;
  bool data_parallel_module = false;  ///< nn.DataParallel: one process driving several GPUs
  bool rank_words = false;      ///< local_rank, DistributedDataParallel(, DistributedSampler( named
  int stages = 0;               ///< pipeline stages of the gate's layout; 0: not known
  bool pipeline_words = false;  ///< the log names pipeline stages (PipelineStage, pipelining)
  /// The log names tensor-parallel layers or libraries (Megatron's tensor_parallel,
  /// ColumnParallelLinear, DeepSpeed's module_inject, fairscale).
  bool tensor_parallel_words = false;
  bool stack_frames = false;  ///< a Python traceback's `File "...", line N, in` frames were read
  bool nccl_info = false;     ///< NCCL's INFO lines are in the log: no need to ask for them
  bool progress_bar = false;  ///< a progress bar (tqdm's `42%|####  | 420/1000`) was printed
  /// NCCL variables the log says are set (NCCL INFO `NCCL_X set by environment to ...`).
  std::set<std::string> set_by_environment;

  /// Takes what one line shows.
  void read(const logs::TextLine& line);
  /// Adds what another scan of the same run saw.
  void merge(const LogContext& other);

  /// Several processes, devices or stages: any sign of a parallel run (a rank above 0, a
  /// launcher, a world size above 1, rank words, nn.DataParallel, stages, pipeline or
  /// tensor-parallel words).
  bool parallel() const;
  /// Stages known (> 1) or named; a layout of one stage says there are none.
  bool pipeline() const { return stages > 1 || (stages == 0 && pipeline_words); }
  /// Whether the context `name` (one of context_names()) holds.
  bool holds(std::string_view name) const;

 private:
  void take(const std::vector<re2::StringPiece>& groups);
  int last_rank_ = -1;  ///< the rank of the line before (most lines repeat it)
};

/// The contexts a `[[signature.when]]` may name. Known facts: one_process (the gate's layout
/// is one process), no_pipeline (its layout has one stage). Signs in the lines: parallel,
/// no_sign_of_parallel (a log that shows none: often an excerpt, so weaker than one_process),
/// stack_without_parallel (no sign either, but a traceback's frames were read: the call stack
/// itself names no launcher, rank, pipeline or tensor-parallel layer),
/// data_parallel_module, pipeline, torchrun, accelerate, deepspeed, slurm, mpirun, not_torchrun,
/// nccl_info, progress_bar; and `set:NCCL_X` for a variable NCCL says the environment set.
std::span<const std::string_view> context_names();

}  // namespace bigmac::diagnose
