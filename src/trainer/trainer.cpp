#include "trainer/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "trainer/bigmac_model.h"
#include "trainer/checkpoint_file.h"
#include "trainer/grad_clip.h"
#include "trainer/layer_split.h"
#include "trainer/markov_source.h"
#include "trainer/pipeline_stage.h"
#include "trainer/rank_group.h"

#ifndef BIGMAC_VERSION
#define BIGMAC_VERSION "0.0.0"
#endif

namespace bigmac::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

/// The hang fault: a real block in a system call, as a deadlocked rank would be. Only a signal
/// ends it (SIGTERM/SIGKILL keep their default action).
[[noreturn]] void block_forever() {
  for (;;) pause();
}

ModelShape model_shape(const config::Config& config) {
  ModelShape shape;
  shape.num_layers = config.model.num_layers;
  shape.hidden = config.model.hidden;
  shape.heads = config.model.heads;
  shape.vocab = config.model.vocab;
  shape.ffn_mult = config.model.ffn_mult;
  shape.seq_length = config.train.seq_length;
  shape.tie_embeddings = config.model.tie_embeddings;
  return shape;
}

}  // namespace

struct Trainer::State {
  TrainerSetup setup;
  LogWriter& log;
  const config::TrainConfig& train;
  int rank;
  int world_size;
  int pp;
  int dp;
  int stage;  ///< pipeline stage; ranks of one pipeline are consecutive
  int dp_rank;
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  std::unique_ptr<RankGroup> group;
  BigMac model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<at::Tensor> params;  ///< what this rank owns and updates
  std::vector<std::pair<std::string, at::Tensor>> named_params;
  LayerRange layers;
  std::string tied_name;  ///< the token embedding, held by the first and the last stage
  std::unique_ptr<PipelineStage> pipeline;
  std::unique_ptr<RankGroup> stage_replicas;  ///< the dp ranks of this stage (pp > 1, dp > 1)
  MarkovSource data;
  int last_checkpoint = -1;

  State(TrainerSetup s, LogWriter& l)
      : setup(std::move(s)),
        log(l),
        train(setup.config.train),
        rank(setup.env.rank),
        world_size(setup.env.world_size),
        pp(setup.config.parallel.pp_size),
        dp(setup.env.world_size / setup.config.parallel.pp_size),
        stage(setup.env.rank % setup.config.parallel.pp_size),
        dp_rank(setup.env.rank / setup.config.parallel.pp_size),
        device(setup.device),
        dtype(setup.config.train.dtype == "float64" ? at::kDouble : at::kFloat),
        data(setup.config.model.vocab, setup.config.train.seq_length,
             static_cast<std::uint64_t>(setup.config.train.seed)) {}

  bool owns_loss() const { return dp_rank == 0 && stage + 1 == pp; }
  bool tied_across_stages() const { return pp > 1 && setup.config.model.tie_embeddings; }
  int samples_per_step() const {
    return train.micro_batch_size * train.gradient_accumulation_steps * dp;
  }

  void log_run() {
    log.write(log.event("run")
                  .field("world_size", world_size)
                  .field("local_rank", setup.env.local_rank)
                  .field("device", setup.device)
                  .field("backend", setup.backend)
                  .field("dtype", train.dtype)
                  .field("seed", static_cast<std::int64_t>(train.seed))
                  .field("torch_version", TORCH_VERSION)
                  .field("pid", static_cast<std::int64_t>(getpid()))
                  .field("tool_version", BIGMAC_VERSION));
  }

  void init_distributed() {
    if (setup.faults.hangs(rank, -1)) block_forever();
    if (setup.backend == "none") return;
    GroupOptions options;
    options.backend = setup.backend;
    options.master_addr = setup.env.master_addr;
    options.master_port = setup.env.master_port;
    options.rank = rank;
    options.world_size = world_size;
    options.timeout = std::chrono::milliseconds(
        static_cast<std::int64_t>(setup.config.launch.init_timeout_s * 1000.0));
    options.agent_store = setup.env.agent_store;
    options.restart_count = setup.env.restart_count;
    auto start = Clock::now();
    try {
      group = RankGroup::connect(options);
    } catch (const c10::Error& error) {
      throw std::runtime_error(
          fmt::format("rendezvous of {} ranks at {}:{} ({}) failed within {} s: {}", world_size,
                      options.master_addr, options.master_port, setup.backend,
                      setup.config.launch.init_timeout_s, error.what_without_backtrace()));
    }
    log.write(log.event("pg_ready")
                  .field("init_ms", elapsed_ms(start))
                  .field("world_size", world_size)
                  .field("backend", setup.backend));
  }

  void build_model() {
    // Every rank builds and initialises the whole model from the seed alone, so the initial
    // parameters are identical on every rank of every layout without a broadcast.
    model = BigMac(model_shape(setup.config));
    model->initialize(static_cast<std::uint64_t>(train.seed), setup.config.model.init_std);
    model->to(device, dtype);
    layers = stage_layers(model->num_layers(), setup.config.model.split_points, stage);
    select_stage_parameters();
    optimizer = std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(train.lr).weight_decay(train.weight_decay));

    const int micro = train.micro_batch_size;
    log.write(log.event("batch")
                  .field("micro_batch_size", micro)
                  .field("grad_accum", train.gradient_accumulation_steps)
                  .field("dp", dp)
                  .field("samples_per_step", samples_per_step())
                  .field("seq_length", train.seq_length)
                  .field("input_shape", std::vector<std::int64_t>{micro, train.seq_length})
                  .field("input_dtype", "int64"));
    log.write(log.event("model")
                  .field("param_count", param_count(*model))
                  .field("param_digest", param_digest(*model)));
    std::int64_t stage_count = 0;
    for (const auto& param : params) stage_count += param.numel();
    const bool holds_tied = tied_across_stages() && (stage == 0 || stage + 1 == pp);
    const bool duplicate = tied_across_stages() && stage + 1 == pp;
    log.write(log.event("layout")
                  .field("stage", stage)
                  .field("num_stages", pp)
                  .field("first_layer", layers.first)
                  .field("last_layer", layers.last)
                  .field("dp_rank", dp_rank)
                  .field("dp_size", dp)
                  .field("param_count", stage_count)
                  .field("tied", holds_tied ? std::vector<std::string>{tied_name}
                                            : std::vector<std::string>{})
                  .field("tied_duplicate_count",
                         duplicate ? model->named_parameters()[tied_name].numel() : 0));
    if (pp > 1) make_pipeline();
    if (pp > 1 && dp > 1) {
      std::vector<int> members;
      for (int replica = 0; replica < dp; ++replica) members.push_back(replica * pp + stage);
      stage_replicas = group->subgroup("dp_stage" + std::to_string(stage), members);
    }
  }

  /// The parameters this rank owns: all of them without a pipeline; with one, the first stage
  /// owns the embeddings, every stage its layers, the last the final norm and head (with a tied
  /// head, its own copy of the token embedding).
  void select_stage_parameters() {
    tied_name = kTiedWeight;
    named_params = stage_parameters(*model, layers, stage == 0, stage + 1 == pp);
    for (const auto& item : named_params) params.push_back(item.second);
  }

  void make_pipeline() {
    StageSpec spec;
    spec.stage = stage;
    spec.stages = pp;
    spec.layers = layers;
    spec.prev_rank = stage == 0 ? -1 : rank - 1;
    spec.next_rank = stage + 1 == pp ? -1 : rank + 1;
    spec.schedule = setup.config.parallel.schedule;
    spec.micro_batches = train.gradient_accumulation_steps;
    spec.micro_batch_size = train.micro_batch_size;
    spec.seq_length = train.seq_length;
    spec.hidden = setup.config.model.hidden;
    spec.dtype = dtype;
    spec.loss_scale = 1.0 / (train.gradient_accumulation_steps * dp);
    spec.trace_shapes = setup.config.trace.shapes;
    spec.send_seq_trim = setup.faults.boundary_seq_trim;
    spec.send_dtype = setup.faults.boundary_dtype;
    spec.stray_loss = setup.faults.middle_stage_loss && stage + 1 < pp;
    pipeline = std::make_unique<PipelineStage>(
        spec, model, *group, log, [this](int step, int mb) { return micro_batch(step, mb); });
  }

  double lr_at(int step) const {
    double lr = train.lr;
    if (train.warmup_steps > 0) {
      lr *= std::min(1.0, static_cast<double>(step + 1) / train.warmup_steps);
    }
    if (setup.faults.lr_scale_by_world) lr *= world_size;
    return lr;
  }

  /// Micro-batch `mb` of this rank at `step`: samples
  /// step·G + dp_rank·micro·accum + mb·micro ... so every layout with the same G sees the same
  /// micro-batches in the same order.
  at::Tensor micro_batch(int step, int mb) const {
    const std::int64_t micro = train.micro_batch_size;
    const std::int64_t first = static_cast<std::int64_t>(step) * samples_per_step() +
                               dp_rank * micro * train.gradient_accumulation_steps + mb * micro;
    // The ragged_microbatch fault: the step's last micro-batch is one sample short, unpadded.
    const bool ragged =
        setup.faults.ragged_microbatch && mb + 1 == train.gradient_accumulation_steps;
    const std::int64_t count = ragged ? micro - 1 : micro;
    auto tokens = data.samples(static_cast<std::uint64_t>(first), static_cast<int>(count));
    return at::from_blob(tokens.data(), {count, data.sample_tokens()}, at::kLong)
        .clone()
        .to(device);
  }

  void train_step(int step) {
    if (setup.faults.crashes(rank, step)) std::abort();
    if (setup.faults.hangs(rank, step)) block_forever();
    if (pp > 1 && setup.faults.stalls(stage, step)) block_forever();
    // A rank that hangs before this line is the one the watchdog names, not the ranks that
    // began the step and wait for it in a collective.
    log.write(log.event("heartbeat").field("global_step", step).field("phase", "start"));
    auto start = Clock::now();
    const double lr = lr_at(step);
    for (auto& group_options : optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group_options.options()).lr(lr);
    }
    optimizer->zero_grad();
    if (pipeline) {
      pipeline_step(step, start, lr);
      return;
    }
    // Every micro-batch loss is scaled by 1 / (accum · dp) and the ranks' gradients are summed:
    // the result is the mean over all G samples whatever the layout.
    const double scale = 1.0 / (train.gradient_accumulation_steps * dp);
    auto loss_sum = at::zeros({1}, at::TensorOptions().dtype(dtype).device(device));
    const auto seq = train.seq_length;
    for (int mb = 0; mb < train.gradient_accumulation_steps; ++mb) {
      auto tokens = micro_batch(step, mb);
      auto logits = model->forward(tokens.narrow(1, 0, seq));
      // A real NaN in the forward pass: it reaches the gradients and, through the update, the
      // weights, so every later step is NaN too.
      if (step == setup.faults.nan_at_step)
        logits = logits + std::numeric_limits<double>::quiet_NaN();
      auto loss = next_token_loss(logits, tokens.narrow(1, 1, seq));
      (loss * scale).backward();
      loss_sum += loss.detach() * scale;
    }
    if (group) {
      std::vector<at::Tensor> reduced;
      for (auto& param : params) reduced.push_back(param.mutable_grad());
      reduced.push_back(loss_sum);
      group->all_reduce_sum(reduced);
    }
    if (setup.faults.grad_blowup > 0) {
      const double factor = std::pow(setup.faults.grad_blowup, step);
      for (auto& param : params) param.mutable_grad().mul_(factor);
    }
    const double max_norm =
        train.grad_clip > 0 ? train.grad_clip : std::numeric_limits<double>::infinity();
    const double grad_norm = clip_grad_norm(params, max_norm);
    optimizer->step();
    const double loss = loss_sum.item<double>();
    const double step_ms = elapsed_ms(start);

    log_step(step, loss, grad_norm, lr, step_ms);
  }

  void pipeline_step(int step, Clock::time_point start, double lr) {
    double loss = pipeline->run_step(step);
    if (stage_replicas) {
      // Each stage sums its gradients over the replicas (losses were scaled by 1 / (M · dp)).
      std::vector<at::Tensor> grads;
      for (auto& param : params) grads.push_back(param.mutable_grad());
      stage_replicas->all_reduce_sum(grads);
    }
    if (tied_across_stages() && (stage == 0 || stage + 1 == pp) && !setup.faults.untied_sync) {
      // The two copies of the tied embedding get the sum of both stages' gradients, so they
      // stay equal (what Megatron-LM does with its embedding group).
      auto grad = model->named_parameters()[tied_name].mutable_grad();
      auto other = at::empty_like(grad);
      const int peer = stage == 0 ? rank + pp - 1 : rank - (pp - 1);
      group->send(grad, peer, 4);
      group->recv(other, peer, 4);
      group->wait_sends();
      grad.add_(other);
    }
    // Global norm over every stage, the tied copy counted once; the loss comes from the last.
    auto sum_sq = at::zeros({}, at::kDouble);
    for (const auto& [name, param] : named_params) {
      if (tied_across_stages() && stage + 1 == pp && name == tied_name) continue;
      sum_sq += param.grad().to(at::kDouble).pow(2).sum();
    }
    auto reduced = at::stack({sum_sq, at::scalar_tensor(loss, at::kDouble)});
    group->all_reduce_sum({reduced});
    // Replicas hold equal gradients: the world sum counts every stage dp times.
    const double grad_norm = std::sqrt(reduced[0].item<double>() / dp);
    loss = reduced[1].item<double>();
    if (train.grad_clip > 0) {
      const double coefficient = std::min(1.0, train.grad_clip / (grad_norm + 1e-6));
      for (auto& param : params) param.mutable_grad().mul_(coefficient);
    }
    optimizer->step();
    log_step(step, loss, grad_norm, lr, elapsed_ms(start));
  }

  void log_step(int step, double loss, double grad_norm, double lr, double step_ms) {
    if (owns_loss() && step != setup.faults.skip_step_log) {
      auto event = log.event("step")
                       .field("global_step", step)
                       .field("loss", loss)
                       .field("grad_norm", grad_norm)
                       .field("lr", lr)
                       .field("samples_per_step", samples_per_step())
                       .field("step_ms", step_ms);
      log.write(event);
      if (step == setup.faults.dup_step_log) log.write(event);
    }
    log.write(log.event("heartbeat").field("global_step", step));
  }

  void maybe_checkpoint(int step, bool last) {
    bool due = last || (train.checkpoint_every > 0 && (step + 1) % train.checkpoint_every == 0);
    if (!due || step == last_checkpoint) return;
    last_checkpoint = step;
    if (rank != 0 && !setup.faults.all_ranks_checkpoint) return;
    // Beside the log file unless configured; none when logging to stdout without a directory.
    auto dir = checkpoint_dir(train.checkpoint_dir, setup.log_file);
    if (!dir) return;
    auto path = write_checkpoint(*dir, named_params, step);
    log.write(log.event("ckpt").field("step", step).field("path", path.string()));
  }

  void close(int steps) {
    log.write(log.event("digest")
                  .field("param_digest", param_digest(named_params))
                  .field("global_step", steps - 1));
    log.write(log.event("done").field("steps", steps));
  }
};

Trainer::Trainer(TrainerSetup setup, LogWriter& log)
    : state_(std::make_unique<State>(std::move(setup), log)) {}

Trainer::~Trainer() = default;

void Trainer::run() {
  try {
    run_phases();
  } catch (const c10::Error& error) {
    // c10's what() carries a C++ backtrace; the message alone is what a diagnosis can match.
    throw std::runtime_error(error.what_without_backtrace());
  }
}

void Trainer::run_phases() {
  State& s = *state_;
  at::set_num_threads(std::max(1, s.setup.config.launch.threads_per_rank));
  s.log_run();
  s.init_distributed();
  s.build_model();
  const int steps = s.train.max_steps;
  for (int step = 0; step < steps; ++step) {
    s.train_step(step);
    s.maybe_checkpoint(step, step + 1 == steps);
  }
  s.close(steps);
}

}  // namespace bigmac::trainer
