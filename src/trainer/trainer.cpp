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

#include "core/atomic_file.h"
#include "trainer/bigmac_model.h"
#include "trainer/markov_source.h"
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

/// Total 2-norm of the gradients, then scales them to at most `max_norm` — the same arithmetic
/// as torch.nn.utils.clip_grad_norm_, so the Python mirror in bench/trainer agrees.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> norms;
  for (const auto& param : params) {
    if (param.grad().defined()) norms.push_back(param.grad().norm());
  }
  if (norms.empty()) return 0.0;
  auto total = at::stack(norms).norm();
  auto coefficient = at::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (const auto& param : params) {
    if (param.grad().defined()) param.grad().mul_(coefficient);
  }
  return total.item<double>();
}

/// A flat checkpoint: a header line, then per parameter its name, shape and float32 bytes.
std::string checkpoint_bytes(const torch::nn::Module& model, int step) {
  std::string out = fmt::format("bigmac-ckpt v1 step={}\n", step);
  for (const auto& item : model.named_parameters(true)) {
    auto values = item.value().detach().to(at::kCPU, at::kFloat).contiguous();
    out += fmt::format("{} [{}]\n", item.key(), fmt::join(values.sizes(), ","));
    out.append(static_cast<const char*>(values.data_ptr()),
               static_cast<std::size_t>(values.numel()) * sizeof(float));
    out += '\n';
  }
  return out;
}

}  // namespace

struct Trainer::State {
  TrainerSetup setup;
  LogWriter& log;
  const config::TrainConfig& train;
  int rank;
  int world_size;
  int dp;
  int dp_rank;
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  std::unique_ptr<RankGroup> group;
  BigMac model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<at::Tensor> params;
  MarkovSource data;
  int last_checkpoint = -1;

  State(TrainerSetup s, LogWriter& l)
      : setup(std::move(s)),
        log(l),
        train(setup.config.train),
        rank(setup.env.rank),
        world_size(setup.env.world_size),
        dp(setup.env.world_size),
        dp_rank(setup.env.rank),
        device(setup.device),
        dtype(setup.config.train.dtype == "float64" ? at::kDouble : at::kFloat),
        data(setup.config.model.vocab, setup.config.train.seq_length,
             static_cast<std::uint64_t>(setup.config.train.seed)) {}

  bool owns_loss() const { return dp_rank == 0; }
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
    model->initialize(static_cast<std::uint64_t>(train.seed));
    model->to(device, dtype);
    params = model->parameters(true);
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
    const auto count = param_count(*model);
    log.write(
        log.event("model").field("param_count", count).field("param_digest", param_digest(*model)));
    log.write(log.event("layout")
                  .field("stage", 0)
                  .field("num_stages", 1)
                  .field("first_layer", 0)
                  .field("last_layer", model->num_layers() - 1)
                  .field("dp_rank", dp_rank)
                  .field("dp_size", dp)
                  .field("param_count", count)
                  .field("tied", std::vector<std::string>{})
                  .field("tied_duplicate_count", 0));
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
    auto tokens = data.samples(static_cast<std::uint64_t>(first), train.micro_batch_size);
    return at::from_blob(tokens.data(), {micro, data.sample_tokens()}, at::kLong)
        .clone()
        .to(device);
  }

  void train_step(int step) {
    if (setup.faults.crashes(rank, step)) std::abort();
    if (setup.faults.hangs(rank, step)) block_forever();
    auto start = Clock::now();
    const double lr = lr_at(step);
    for (auto& group_options : optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group_options.options()).lr(lr);
    }
    optimizer->zero_grad();
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

  /// Where checkpoints go: [train] checkpoint_dir, else beside the log file; none when the log
  /// goes to stdout and no directory is configured (nothing to put it beside).
  std::optional<std::filesystem::path> checkpoint_dir() const {
    if (!train.checkpoint_dir.empty()) return std::filesystem::path(train.checkpoint_dir);
    if (setup.log_file.empty() || setup.log_file == "-") return std::nullopt;
    auto parent = std::filesystem::path(setup.log_file).parent_path();
    return parent.empty() ? std::filesystem::path(".") : parent;
  }

  void maybe_checkpoint(int step, bool last) {
    bool due = last || (train.checkpoint_every > 0 && (step + 1) % train.checkpoint_every == 0);
    if (!due || step == last_checkpoint) return;
    last_checkpoint = step;
    if (rank != 0 && !setup.faults.all_ranks_checkpoint) return;
    auto dir = checkpoint_dir();
    if (!dir) return;
    std::filesystem::create_directories(*dir);
    auto path = *dir / fmt::format("bigmac-step{:06d}.ckpt", step);
    auto written = write_file_atomically(path, checkpoint_bytes(*model, step));
    if (!written) throw std::runtime_error("checkpoint: " + written.error().format());
    log.write(log.event("ckpt").field("step", step).field("path", path.string()));
  }

  void close(int steps) {
    log.write(log.event("digest")
                  .field("param_digest", param_digest(*model))
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
