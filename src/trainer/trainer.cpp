#include "trainer/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "trainer/bigmac_model.h"
#include "trainer/checkpoint_file.h"
#include "trainer/fault_injector.h"
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

using StepClock = std::chrono::steady_clock;

double elapsed_ms(StepClock::time_point since) {
  return std::chrono::duration<double, std::milli>(StepClock::now() - since).count();
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
  std::unique_ptr<CollectiveLedger> ledger;  ///< before `group`, which writes to it
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
  FaultInjector faults;
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
             static_cast<std::uint64_t>(setup.config.train.seed)),
        faults(setup.faults, RankPosition{rank, stage, pp, world_size}) {}

  bool owns_loss() const { return dp_rank == 0 && stage + 1 == pp; }
  bool tied_across_stages() const { return pp > 1 && setup.config.model.tie_embeddings; }
  int samples_per_step() const {
    return train.micro_batch_size * train.gradient_accumulation_steps * dp;
  }

  void log_run() {
    log.write(log.event(EventKind::kRun)
                  .field(FieldKey::kWorldSize, world_size)
                  .field(FieldKey::kLocalRank, setup.env.local_rank)
                  .field(FieldKey::kDevice, setup.device)
                  .field(FieldKey::kBackend, setup.backend)
                  .field(FieldKey::kDtype, train.dtype)
                  .field(FieldKey::kSeed, static_cast<std::int64_t>(train.seed))
                  .field(FieldKey::kTorchVersion, TORCH_VERSION)
                  .field(FieldKey::kPid, static_cast<std::int64_t>(getpid()))
                  .field(FieldKey::kToolVersion, BIGMAC_VERSION));
  }

  void init_distributed() {
    faults.before_rendezvous();
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
    auto start = StepClock::now();
    // However it fails — a timeout of its own, or the store's host gone first (the store
    // client's `Connection reset by peer` is a std::system_error) — the error names the
    // rendezvous it was.
    const auto failed = [&](const char* what) {
      return std::runtime_error(
          fmt::format("rendezvous of {} ranks at {}:{} ({}) failed within {} s: {}", world_size,
                      options.master_addr, options.master_port, setup.backend,
                      setup.config.launch.init_timeout_s, what));
    };
    try {
      group = RankGroup::connect(options);
    } catch (const c10::Error& error) {
      throw failed(error.what_without_backtrace());
    } catch (const std::exception& error) {
      throw failed(error.what());
    }
    // Every collective and transfer is in the log before it goes in (the `coll` events).
    ledger = std::make_unique<CollectiveLedger>(log, rank);
    group->set_ledger(ledger.get());
    log.write(log.event(EventKind::kPgReady)
                  .field(FieldKey::kInitMs, elapsed_ms(start))
                  .field(FieldKey::kWorldSize, world_size)
                  .field(FieldKey::kBackend, setup.backend));
  }

  void build_model() {
    // Every rank builds and initialises the whole model from the seed alone, so the initial
    // parameters are identical on every rank of every layout without a broadcast.
    model = BigMac(model_shape(setup.config));
    model->initialize(faults.init_seed(static_cast<std::uint64_t>(train.seed), dp_rank),
                      setup.config.model.init_std);
    model->to(device, dtype);
    layers = stage_layers(model->num_layers(), setup.config.model.split_points, stage);
    select_stage_parameters();
    optimizer = std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(train.lr).weight_decay(train.weight_decay));

    const int micro = train.micro_batch_size;
    log.write(log.event(EventKind::kBatch)
                  .field(FieldKey::kMicroBatchSize, micro)
                  .field(FieldKey::kGradAccum, train.gradient_accumulation_steps)
                  .field(FieldKey::kDp, dp)
                  .field(FieldKey::kSamplesPerStep, samples_per_step())
                  .field(FieldKey::kSeqLength, train.seq_length)
                  .field(FieldKey::kInputShape, std::vector<std::int64_t>{micro, train.seq_length})
                  .field(FieldKey::kInputDtype, "int64"));
    log.write(log.event(EventKind::kModel)
                  .field(FieldKey::kParamCount, param_count(*model))
                  .field(FieldKey::kParamDigest, param_digest(*model)));
    std::int64_t stage_count = 0;
    for (const auto& param : params) stage_count += param.numel();
    const bool holds_tied = tied_across_stages() && (stage == 0 || stage + 1 == pp);
    const bool duplicate = tied_across_stages() && stage + 1 == pp;
    log.write(log.event(EventKind::kLayout)
                  .field(FieldKey::kStage, stage)
                  .field(FieldKey::kNumStages, pp)
                  .field(FieldKey::kFirstLayer, layers.first)
                  .field(FieldKey::kLastLayer, layers.last)
                  .field(FieldKey::kDpRank, dp_rank)
                  .field(FieldKey::kDpSize, dp)
                  .field(FieldKey::kParamCount, stage_count)
                  .field(FieldKey::kTied, holds_tied ? std::vector<std::string>{tied_name}
                                                     : std::vector<std::string>{})
                  .field(FieldKey::kTiedDuplicateCount,
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
    pipeline =
        std::make_unique<PipelineStage>(spec, model, *group, log, faults,
                                        [this](int step, int mb) { return micro_batch(step, mb); });
  }

  double lr_at(int step) const {
    double lr = train.lr;
    if (train.warmup_steps > 0) {
      lr *= std::min(1.0, static_cast<double>(step + 1) / train.warmup_steps);
    }
    return faults.learning_rate(lr);
  }

  /// Micro-batch `mb` of this rank at `step`: samples
  /// step·G + dp_rank·micro·accum + mb·micro ... so every layout with the same G sees the same
  /// micro-batches in the same order.
  at::Tensor micro_batch(int step, int mb) const {
    const std::int64_t micro = train.micro_batch_size;
    const std::int64_t first =
        static_cast<std::int64_t>(step) * samples_per_step() +
        faults.data_rank(dp_rank) * micro * train.gradient_accumulation_steps + mb * micro;
    const std::int64_t count =
        faults.micro_batch_samples(mb, train.gradient_accumulation_steps, micro);
    auto tokens = data.samples(static_cast<std::uint64_t>(first), static_cast<int>(count));
    return at::from_blob(tokens.data(), {count, data.sample_tokens()}, at::kLong)
        .clone()
        .to(device);
  }

  void train_step(int step) {
    faults.at_step_start(step);
    if (ledger) ledger->set_step(step);
    // A rank that hangs before this line is the one the watchdog names, not the ranks that
    // began the step and wait for it in a collective.
    log.write(log.event(EventKind::kHeartbeat)
                  .field(FieldKey::kGlobalStep, step)
                  .field(FieldKey::kPhase, "start"));
    auto start = StepClock::now();
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
    const double grad_scale =
        1.0 / (train.gradient_accumulation_steps * faults.replicas_averaged(dp));
    auto loss_sum = at::zeros({1}, at::TensorOptions().dtype(dtype).device(device));
    const auto seq = train.seq_length;
    std::string input_digest;
    SampleSet samples;
    for (int mb = 0; mb < train.gradient_accumulation_steps; ++mb) {
      auto tokens = micro_batch(step, mb);
      if (mb == 0) input_digest = tensor_digest(tokens);
      samples.add(tokens);
      auto logits = faults.logits(model->forward(tokens.narrow(1, 0, seq)), step);
      auto loss = next_token_loss(logits, tokens.narrow(1, 1, seq));
      (loss * grad_scale).backward();
      loss_sum += loss.detach() * scale;
    }
    if (group) {
      std::vector<at::Tensor> reduced;
      if (faults.reduces_gradients()) {
        for (auto& param : params) reduced.push_back(param.mutable_grad());
      }
      reduced.push_back(loss_sum);
      faults.world_reduce_inputs(reduced, step);
      faults.before_world_reduce(*group, step);
      group->all_reduce_sum(reduced);
    }
    faults.gradients(params, step);
    const at::Tensor total_norm = gradient_norm(params);
    clip_gradients(params, total_norm, train.grad_clip);
    const double grad_norm = total_norm.item<double>();
    optimizer->step();
    const double loss = loss_sum.item<double>();
    const double step_ms = elapsed_ms(start);

    // The digests first: a reader that sees the step sees its digests (an early verdict on the
    // step waits for them, gates/replica_checks.h).
    log_digests(step, input_digest, samples);
    log_step(step, loss, grad_norm, lr, step_ms);
  }

  // Every rank's own digests of the step: its first micro-batch and, at steps 0, 1, 2, 4, 8,
  // ..., its parameters after the update. The replicas of a stage must agree on the
  // parameters (replicas_in_sync) and read different micro-batches (no_duplicate_samples); the
  // ranks that read input add the step's sample set, which over all of them must be the
  // baseline's step's (sample_coverage).
  void log_digests(int step, const std::string& input_digest,
                   const std::optional<SampleSet>& samples) {
    const bool params_due = step <= 2 || (step & (step - 1)) == 0;
    if (!params_due && input_digest.empty()) return;
    auto event = log.event(EventKind::kDigest).field(FieldKey::kGlobalStep, step);
    if (!input_digest.empty()) event.field(FieldKey::kInputDigest, input_digest);
    if (samples) {
      event.field(FieldKey::kSampleCount, samples->count)
          .field(FieldKey::kSampleDigest, fmt::format("{:016x}", samples->digest));
    }
    if (params_due) event.field(FieldKey::kParamDigest, param_digest(named_params));
    log.write(event);
  }

  void pipeline_step(int step, StepClock::time_point start, double lr) {
    double loss = pipeline->run_step(step);
    if (stage_replicas && faults.reduces_gradients()) {
      // Each stage sums its gradients over the replicas (losses were scaled by 1 / (M · dp)).
      std::vector<at::Tensor> grads;
      for (auto& param : params) grads.push_back(param.mutable_grad());
      stage_replicas->all_reduce_sum(grads);
    }
    if (tied_across_stages() && (stage == 0 || stage + 1 == pp) &&
        faults.synchronises_tied_weights()) {
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
    std::vector<at::Tensor> totals{at::stack({sum_sq, at::scalar_tensor(loss, at::kDouble)})};
    faults.world_reduce_inputs(totals, step);
    faults.before_world_reduce(*group, step);
    group->all_reduce_sum(totals);
    const at::Tensor& reduced = totals.front();
    // Replicas hold equal gradients: the world sum counts every stage dp times.
    const double grad_norm = std::sqrt(reduced[0].item<double>() / dp);
    loss = reduced[1].item<double>();
    clip_gradients(params, at::scalar_tensor(grad_norm, at::kDouble), train.grad_clip);
    optimizer->step();
    const double step_ms = elapsed_ms(start);
    // The samples this stage's pipeline replica trains on (a middle stage reads none itself);
    // the first stage, where they enter, gives the replica's sample set for sample_coverage.
    std::optional<SampleSet> samples;
    if (stage == 0) {
      samples.emplace();
      for (int mb = 0; mb < train.gradient_accumulation_steps; ++mb) {
        samples->add(micro_batch(step, mb));
      }
    }
    log_digests(step, tensor_digest(micro_batch(step, 0)), samples);
    log_step(step, loss, grad_norm, lr, step_ms);
  }

  void log_step(int step, double loss, double grad_norm, double lr, double step_ms) {
    if (owns_loss()) {
      auto event = log.event(EventKind::kStep)
                       .field(FieldKey::kGlobalStep, step)
                       .field(FieldKey::kLoss, loss)
                       .field(FieldKey::kGradNorm, grad_norm)
                       .field(FieldKey::kLr, lr)
                       .field(FieldKey::kSamplesPerStep, samples_per_step())
                       .field(FieldKey::kStepMs, step_ms);
      for (int copy = 0; copy < faults.step_log_copies(step); ++copy) log.write(event);
    }
    log.write(log.event(EventKind::kHeartbeat).field(FieldKey::kGlobalStep, step));
  }

  void maybe_checkpoint(int step, bool last) {
    bool due = last || (train.checkpoint_every > 0 && (step + 1) % train.checkpoint_every == 0);
    if (!due || step == last_checkpoint) return;
    last_checkpoint = step;
    if (!faults.writes_checkpoints()) return;
    // Beside the log file unless configured; none when logging to stdout without a directory.
    auto dir = checkpoint_dir(train.checkpoint_dir, setup.log_file);
    if (!dir) return;
    auto path = write_checkpoint(*dir, named_params, step);
    log.write(log.event(EventKind::kCheckpoint)
                  .field(FieldKey::kStep, step)
                  .field(FieldKey::kPath, path.string()));
  }

  void close(int steps) {
    log.write(log.event(EventKind::kDigest)
                  .field(FieldKey::kParamDigest, param_digest(named_params))
                  .field(FieldKey::kGlobalStep, steps - 1));
    log.write(log.event(EventKind::kDone).field(FieldKey::kSteps, steps));
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
