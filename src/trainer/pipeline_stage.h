#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/bigmac_model.h"
#include "trainer/fault_injector.h"
#include "trainer/layer_split.h"
#include "trainer/log_writer.h"
#include "trainer/pipeline_schedule.h"
#include "trainer/rank_group.h"

namespace bigmac::trainer {

/// Where one pipeline stage sits and what it runs.
struct StageSpec {
  int stage = 0;
  int stages = 1;
  LayerRange layers;
  int prev_rank = -1;  ///< global rank of the previous stage, -1 on the first
  int next_rank = -1;  ///< global rank of the next stage, -1 on the last
  std::string schedule = "1f1b";
  int micro_batches = 1;
  int micro_batch_size = 1;
  int seq_length = 1;
  int hidden = 1;
  at::ScalarType dtype = at::kFloat;
  double loss_scale = 1.0;  ///< 1 / (micro_batches · dp): the mean over the step's samples
  bool trace_shapes = false;
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

/// One stage of a pipeline-parallel model: runs its layers for every micro-batch of a step in
/// schedule order, receives activations from the previous stage and gradients from the next by
/// c10d point-to-point, and logs `mb` (and with trace.shapes, `shape`) events. Before the first
/// activation crosses a boundary the two stages compare shape and dtype and fail with both.
class PipelineStage {
 public:
  /// `tokens(step, mb)` returns micro-batch mb as [micro, seq + 1] int64. `faults` act on what
  /// the stage sends and where it computes a loss.
  PipelineStage(StageSpec spec, BigMac model, RankGroup& group, LogWriter& log,
                const FaultInjector& faults, std::function<at::Tensor(int step, int mb)> tokens);

  /// Forwards and backwards of every micro-batch of `step`; returns the sum of the scaled
  /// micro-batch losses on the last stage (0 elsewhere). Gradients accumulate in the model.
  double run_step(int step);

  const StageSpec& spec() const { return spec_; }

 private:
  void forward(int step, int mb);
  void backward(int step, int mb);
  void check_boundary(const at::Tensor& hidden, bool sender);
  /// An event about micro-batch `mb` of `step` on this stage: global_step, stage, mb.
  LogEvent stage_event(EventKind ev, int step, int mb) const;
  void log_shape(int step, int mb, const char* where, const char* name, const at::Tensor& t);
  void log_mb(int step, int mb, const char* phase, double start, double end);

  StageSpec spec_;
  BigMac model_;
  RankGroup& group_;
  LogWriter& log_;
  const FaultInjector& faults_;
  std::function<at::Tensor(int, int)> tokens_;
  std::vector<at::Tensor> inputs_;   ///< received activations (require grad), per micro-batch
  std::vector<at::Tensor> outputs_;  ///< sent activations, or the scaled loss on the last stage
  at::Tensor loss_sum_;
  bool boundary_checked_ = false;
};

}  // namespace bigmac::trainer
