#include "trainer/pipeline_stage.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <stdexcept>

namespace bigmac::trainer {
namespace {

constexpr int kActivationTag = 1;
constexpr int kGradientTag = 2;
constexpr int kMetadataTag = 3;

std::vector<std::int64_t> dims(const at::Tensor& t) { return t.sizes().vec(); }

std::string describe(const std::vector<std::int64_t>& meta) {
  // meta = {dtype code, ndim, dims...}
  std::vector<std::int64_t> shape(meta.begin() + 2, meta.begin() + 2 + meta[1]);
  return fmt::format("[{}] {}", fmt::join(shape, ","),
                     dtype_name(static_cast<at::ScalarType>(meta[0])));
}

}  // namespace

PipelineStage::PipelineStage(StageSpec spec, BigMac model, RankGroup& group, LogWriter& log,
                             const FaultInjector& faults,
                             std::function<at::Tensor(int, int)> tokens)
    : spec_(std::move(spec)),
      model_(std::move(model)),
      group_(group),
      log_(log),
      faults_(faults),
      tokens_(std::move(tokens)) {}

void PipelineStage::check_boundary(const at::Tensor& hidden, bool sender) {
  // Metadata first, fixed size: dtype, rank of the shape, up to 6 dims.
  auto meta = at::zeros({8}, at::kLong);
  if (sender) {
    auto d = dims(hidden);
    meta[0] = static_cast<std::int64_t>(hidden.scalar_type());
    meta[1] = static_cast<std::int64_t>(d.size());
    for (std::size_t i = 0; i < d.size() && i < 6; ++i)
      meta[static_cast<std::int64_t>(i) + 2] = d[i];
    group_.send(meta, spec_.next_rank, kMetadataTag);
    return;
  }
  group_.recv(meta, spec_.prev_rank, kMetadataTag);
  std::vector<std::int64_t> got(meta.data_ptr<std::int64_t>(), meta.data_ptr<std::int64_t>() + 8);
  std::vector<std::int64_t> want = {static_cast<std::int64_t>(hidden.scalar_type()),
                                    3,
                                    spec_.micro_batch_size,
                                    spec_.seq_length,
                                    spec_.hidden,
                                    0,
                                    0,
                                    0};
  if (got != want) {
    throw std::runtime_error(fmt::format(
        "pipeline boundary stage {} -> stage {}: stage {} sends hidden_states {}, stage {} expects "
        "{}",
        spec_.stage - 1, spec_.stage, spec_.stage - 1, describe(got), spec_.stage, describe(want)));
  }
}

LogEvent PipelineStage::stage_event(EventKind ev, int step, int mb) const {
  LogEvent event = log_.event(ev);
  event.field(FieldKey::kGlobalStep, step)
      .field(FieldKey::kStage, spec_.stage)
      .field(FieldKey::kMb, mb);
  return event;
}

void PipelineStage::log_shape(int step, int mb, const char* where, const char* name,
                              const at::Tensor& t) {
  if (!spec_.trace_shapes) return;
  log_.write(stage_event(EventKind::kShape, step, mb)
                 .field(FieldKey::kWhere, where)
                 .field(FieldKey::kName, name)
                 .field(FieldKey::kShape, dims(t))
                 .field(FieldKey::kDtype, dtype_name(t.scalar_type()))
                 .field(FieldKey::kDevice, t.device().str()));
}

void PipelineStage::log_mb(int step, int mb, const char* phase, double start, double end) {
  log_.write(stage_event(EventKind::kMicroBatch, step, mb)
                 .field(FieldKey::kPhase, phase)
                 .field(FieldKey::kStart, start)
                 .field(FieldKey::kEnd, end));
}

void PipelineStage::forward(int step, int mb) {
  // start/end bracket this stage's own work: waiting for a neighbour is the bubble, not work.
  double start = wall_time_s();
  const auto seq = spec_.seq_length;
  at::Tensor tokens;
  at::Tensor hidden;
  if (spec_.first()) {
    tokens = tokens_(step, mb);
    hidden = model_->embed(tokens.narrow(1, 0, seq));
  } else {
    auto received = at::empty({spec_.micro_batch_size, seq, spec_.hidden}, spec_.dtype);
    if (!boundary_checked_) check_boundary(received, /*sender=*/false);
    group_.recv(received, spec_.prev_rank, kActivationTag);
    start = wall_time_s();
    log_shape(step, mb, "recv", "hidden_states", received);
    received.requires_grad_(true);
    inputs_[static_cast<std::size_t>(mb)] = received;
    hidden = received;
  }
  log_shape(step, mb, "enter", "hidden_states", hidden);
  hidden = model_->run_layers(hidden, spec_.layers.first, spec_.layers.last);
  log_shape(step, mb, "exit", "hidden_states", hidden);
  if (spec_.last()) {
    if (!tokens.defined()) tokens = tokens_(step, mb);
    auto labels = tokens.narrow(1, 1, seq);
    auto logits = model_->head(hidden);
    // The shapes gate matches the labels against what the loss actually sees.
    log_shape(step, mb, "exit", "logits", logits);
    log_shape(step, mb, "labels", "labels", labels);
    auto loss = next_token_loss(logits, labels);
    log_.write(
        stage_event(EventKind::kLoss, step, mb).field(FieldKey::kValue, loss.item<double>()));
    auto scaled = loss * spec_.loss_scale;
    loss_sum_ += scaled.detach();
    outputs_[static_cast<std::size_t>(mb)] = scaled;
  } else {
    if (faults_.computes_stray_loss()) {
      // The middle_stage_loss fault: a loss where there are no labels to learn from.
      if (!tokens.defined()) tokens = tokens_(step, mb);
      at::NoGradGuard no_grad;
      auto stray = next_token_loss(model_->head(hidden), tokens.narrow(1, 1, seq));
      log_.write(
          stage_event(EventKind::kLoss, step, mb).field(FieldKey::kValue, stray.item<double>()));
    }
    hidden = faults_.outgoing_activation(hidden);
    if (!boundary_checked_) check_boundary(hidden, /*sender=*/true);
    log_shape(step, mb, "send", "hidden_states", hidden);
    group_.send(hidden.detach(), spec_.next_rank, kActivationTag);
    outputs_[static_cast<std::size_t>(mb)] = hidden;
  }
  boundary_checked_ = true;
  log_mb(step, mb, "F", start, wall_time_s());
}

void PipelineStage::backward(int step, int mb) {
  double start = wall_time_s();
  auto& output = outputs_[static_cast<std::size_t>(mb)];
  if (spec_.last()) {
    output.backward();
  } else {
    auto grad = at::empty(output.sizes(), output.options().requires_grad(false));
    group_.recv(grad, spec_.next_rank, kGradientTag);
    start = wall_time_s();
    output.backward(grad);
  }
  if (!spec_.first()) {
    group_.send(inputs_[static_cast<std::size_t>(mb)].grad(), spec_.prev_rank, kGradientTag);
  }
  output = at::Tensor();  // free the graph of this micro-batch
  log_mb(step, mb, "B", start, wall_time_s());
}

double PipelineStage::run_step(int step) {
  inputs_.assign(static_cast<std::size_t>(spec_.micro_batches), at::Tensor());
  outputs_.assign(static_cast<std::size_t>(spec_.micro_batches), at::Tensor());
  loss_sum_ = at::zeros({}, at::kDouble);
  // A stage that owns no layer (split_out_of_range) has nothing to run and takes no part in the
  // schedule; its neighbours wait for it.
  if (spec_.layers.size() == 0) return 0.0;
  for (const PipeAction& action :
       pipeline_schedule(spec_.schedule, spec_.stage, spec_.stages, spec_.micro_batches)) {
    if (action.phase == PipeAction::Phase::kForward) {
      forward(step, action.mb);
    } else {
      backward(step, action.mb);
    }
  }
  group_.wait_sends();
  return loss_sum_.item<double>();
}

}  // namespace bigmac::trainer
