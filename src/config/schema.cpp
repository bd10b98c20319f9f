#include "config/schema.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <type_traits>

#include "core/checked_integer.h"

namespace bigmac::config {
namespace {

Value to_value(bool v) { return v; }
Value to_value(int v) { return std::int64_t{v}; }
Value to_value(std::int64_t v) { return v; }
Value to_value(double v) { return v; }
Value to_value(const std::string& v) { return v; }
Value to_value(const std::vector<std::string>& v) { return v; }

// Values reaching `set` were already checked against the entry's type and limits.
void from_value(const Value& v, bool& out) { out = std::get<bool>(v); }
// The entry's limits keep an int member's value in range (member_limit); .value() only throws
// on a programming fault.
void from_value(const Value& v, int& out) { out = narrow<int>(std::get<std::int64_t>(v)).value(); }
void from_value(const Value& v, std::int64_t& out) { out = std::get<std::int64_t>(v); }
void from_value(const Value& v, double& out) {
  out = std::holds_alternative<double>(v) ? std::get<double>(v)
                                          : static_cast<double>(std::get<std::int64_t>(v));
}
void from_value(const Value& v, std::string& out) { out = std::get<std::string>(v); }
void from_value(const Value& v, std::vector<std::string>& out) {
  out = std::get<std::vector<std::string>>(v);
}

Value split_points_get(const Config& c) {
  if (c.model.split_points_auto) return std::string("auto");
  std::vector<std::int64_t> points(c.model.split_points.begin(), c.model.split_points.end());
  return points;
}

void split_points_set(Config& c, const Value& v) {
  if (std::holds_alternative<std::string>(v)) {
    c.model.split_points_auto = true;
    c.model.split_points.clear();
    return;
  }
  c.model.split_points_auto = false;
  c.model.split_points.clear();
  for (std::int64_t p : std::get<std::vector<std::int64_t>>(v)) {
    c.model.split_points.push_back(narrow<int>(p).value());  // value_parse checked the range
  }
}

constexpr std::optional<std::int64_t> kNone = std::nullopt;

// An integer key's limit, narrowed to what its member can hold: a value past INT_MAX is refused
// when it is read instead of wrapping when it is stored.
template <class Member>
constexpr std::optional<std::int64_t> member_limit(std::optional<std::int64_t> given, bool upper) {
  if constexpr (std::is_integral_v<Member> && !std::is_same_v<Member, bool>) {
    const std::int64_t type_limit = upper ? std::int64_t{std::numeric_limits<Member>::max()}
                                          : std::int64_t{std::numeric_limits<Member>::min()};
    if (!given) return type_limit;
    return upper ? std::min(*given, type_limit) : std::max(*given, type_limit);
  } else {
    return given;
  }
}

#define BIGMAC_ENTRY(ABOVE, TABLE, KEY, LAYER, TYPE, MEMBER, DOC, MIN, MAX, ...)                 \
  SchemaEntry {                                                                                  \
    TABLE, KEY, Layer::LAYER, ValueType::TYPE, DOC,                                              \
        member_limit<std::remove_cvref_t<decltype(std::declval<Config&>().MEMBER)>>(MIN, false), \
        member_limit<std::remove_cvref_t<decltype(std::declval<Config&>().MEMBER)>>(MAX, true),  \
        {__VA_ARGS__}, [](const Config& c) -> Value { return to_value(c.MEMBER); },              \
        [](Config& c, const Value& v) { from_value(v, c.MEMBER); }, ABOVE                        \
  }
/// A key whose value must be at least MIN (and at most MAX).
#define BIGMAC_FIELD(...) BIGMAC_ENTRY(false, __VA_ARGS__)
/// A key whose value must be more than MIN: a timeout of 0 s would stop every gate at once.
#define BIGMAC_ABOVE(...) BIGMAC_ENTRY(true, __VA_ARGS__)

const std::vector<SchemaEntry>& entries() {
  static const std::vector<SchemaEntry> table = {
      // [launch]
      BIGMAC_FIELD("launch", "nnodes", kLaunch, kInt, launch.nnodes, "number of hosts", 1,
                   kMaxNodes),
      BIGMAC_FIELD("launch", "nproc_per_node", kLaunch, kInt, launch.nproc_per_node,
                   "rank processes per host (the target gate's count)", 1, kMaxProcsPerNode),
      BIGMAC_FIELD("launch", "master_addr", kLaunch, kString, launch.master_addr,
                   "rendezvous host (rank 0's TCPStore)", kNone, kNone),
      BIGMAC_FIELD("launch", "master_port", kLaunch, kInt, launch.master_port,
                   "rendezvous TCP port (0: a free one picked for each gate)", 0, 65535),
      BIGMAC_FIELD("launch", "devices", kLaunch, kString, launch.devices,
                   "which devices the ranks use", kNone, kNone, "cpu", "cuda", "auto"),
      BIGMAC_FIELD("launch", "backend", kLaunch, kString, launch.backend,
                   "collective backend (auto: nccl on cuda, gloo on cpu)", kNone, kNone, "auto",
                   "gloo", "nccl"),
      BIGMAC_FIELD("launch", "launcher", kLaunch, kString, launch.launcher, "who starts the ranks",
                   kNone, kNone, "builtin", "torchrun", "accelerate", "slurm", "slurm+torchrun"),
      BIGMAC_FIELD("launch", "threads_per_rank", kLaunch, kInt, launch.threads_per_rank,
                   "intra-op threads of each rank (OMP_NUM_THREADS)", 1, kNone),
      // Time limits have a floor of 1 s: the watchdog looks every 0.2 s, and a limit of 1e-9 s
      // stops every gate at once with "no progress for 0.018 s (limit 0.0 s)".
      BIGMAC_FIELD("launch", "init_timeout_s", kLaunch, kFloat, launch.init_timeout_s,
                   "limit for forming the process group", 1, kNone),
      BIGMAC_FIELD("launch", "stall_timeout_s", kLaunch, kFloat, launch.stall_timeout_s,
                   "the most silence allowed a rank after rendezvous (the adaptive limit's cap)", 1,
                   kNone),
      BIGMAC_FIELD("launch", "stall_min_s", kLaunch, kFloat, launch.stall_min_s,
                   "after 2 timed steps a rank is stalled when silent for max(stall_min_s, "
                   "stall_factor × its median step time)",
                   1, kNone),
      BIGMAC_FIELD("launch", "stall_factor", kLaunch, kFloat, launch.stall_factor,
                   "see stall_min_s (0: no adaptive limit, stall_timeout_s always)", 0, kNone),
      BIGMAC_FIELD("launch", "pick_free_port", kLaunch, kBool, launch.pick_free_port,
                   "when master_port is taken, use the next free port above it", kNone, kNone),
      // [launch.slurm]
      BIGMAC_FIELD("launch.slurm", "partition", kLaunch, kString, launch.slurm.partition,
                   "srun --partition outside an allocation (empty: the default one)", kNone, kNone),
      BIGMAC_FIELD("launch.slurm", "account", kLaunch, kString, launch.slurm.account,
                   "srun --account outside an allocation (empty: your default)", kNone, kNone),
      BIGMAC_FIELD("launch.slurm", "time", kLaunch, kString, launch.slurm.time,
                   "srun --time outside an allocation, e.g. \"00:30:00\" (empty: default)", kNone,
                   kNone),
      BIGMAC_FIELD("launch.slurm", "gpus_per_node", kLaunch, kInt, launch.slurm.gpus_per_node,
                   "srun --gpus-per-node (0: one GPU per task when devices = cuda)", 0, kNone),
      BIGMAC_FIELD("launch.slurm", "extra_args", kLaunch, kStringList, launch.slurm.extra_args,
                   "more srun arguments, one array entry per argv entry", kNone, kNone),
      // [launch.accelerate]
      BIGMAC_FIELD(
          "launch.accelerate", "config_file", kLaunch, kString, launch.accelerate.config_file,
          "accelerate launch --config_file (empty: accelerate's own default config)", kNone, kNone),
      BIGMAC_FIELD("launch.accelerate", "extra_args", kLaunch, kStringList,
                   launch.accelerate.extra_args,
                   "more `accelerate launch` options, one array entry per argv entry (the tool "
                   "sets the process counts, rendezvous and log options)",
                   kNone, kNone),
      // [parallel]
      BIGMAC_FIELD("parallel", "pp_size", kSchedule, kInt, parallel.pp_size, "pipeline stages", 1,
                   kMaxWorldSize),
      BIGMAC_FIELD("parallel", "tp_size", kSchedule, kInt, parallel.tp_size, "tensor-parallel ways",
                   1, kMaxWorldSize),
      BIGMAC_FIELD("parallel", "schedule", kSchedule, kString, parallel.schedule,
                   "pipeline schedule", kNone, kNone, "1f1b", "gpipe"),
      BIGMAC_FIELD("parallel", "micro_batches", kSchedule, kInt, parallel.micro_batches,
                   "pipeline micro-batches per step (0: = gradient_accumulation_steps)", 0, kNone),
      // [train]
      BIGMAC_FIELD("train", "micro_batch_size", kSchedule, kInt, train.micro_batch_size,
                   "samples per micro-batch", 1, kNone),
      BIGMAC_FIELD("train", "gradient_accumulation_steps", kSchedule, kInt,
                   train.gradient_accumulation_steps, "micro-batches per step per replica", 1,
                   kNone),
      BIGMAC_FIELD("train", "seq_length", kSchedule, kInt, train.seq_length, "tokens per sample", 2,
                   kNone),
      BIGMAC_FIELD("train", "seed", kSchedule, kInt, train.seed, "seed of weights and data", 0,
                   kNone),
      BIGMAC_FIELD("train", "max_steps", kSchedule, kInt, train.max_steps,
                   "optimizer steps per gate", 1, kNone),
      BIGMAC_FIELD("train", "lr", kSchedule, kFloat, train.lr, "peak learning rate", 0, kNone),
      BIGMAC_FIELD("train", "warmup_steps", kSchedule, kInt, train.warmup_steps,
                   "linear warmup steps", 0, kNone),
      BIGMAC_FIELD("train", "weight_decay", kSchedule, kFloat, train.weight_decay,
                   "AdamW weight decay", 0, kNone),
      BIGMAC_FIELD("train", "grad_clip", kSchedule, kFloat, train.grad_clip,
                   "global grad-norm clip (0: off)", 0, kNone),
      BIGMAC_FIELD("train", "dtype", kSchedule, kString, train.dtype, "parameter dtype", kNone,
                   kNone, "float32", "float64", "bfloat16"),
      BIGMAC_FIELD("train", "checkpoint_dir", kSchedule, kString, train.checkpoint_dir,
                   "where checkpoints go (empty: beside the log)", kNone, kNone),
      BIGMAC_FIELD("train", "checkpoint_every", kSchedule, kInt, train.checkpoint_every,
                   "steps between checkpoints (0: after the last step only)", 0, kNone),
      // [model]
      BIGMAC_FIELD("model", "num_layers", kModel, kInt, model.num_layers, "transformer blocks", 1,
                   kNone),
      BIGMAC_FIELD("model", "hidden", kModel, kInt, model.hidden, "hidden size", 1, kNone),
      BIGMAC_FIELD("model", "heads", kModel, kInt, model.heads, "attention heads", 1, kNone),
      BIGMAC_FIELD("model", "vocab", kModel, kInt, model.vocab, "vocabulary size", 2, kNone),
      BIGMAC_FIELD("model", "ffn_mult", kModel, kInt, model.ffn_mult, "feed-forward width / hidden",
                   1, kNone),
      BIGMAC_FIELD("model", "init_std", kModel, kFloat, model.init_std,
                   "standard deviation of the initial weight matrices", 0, kNone),
      BIGMAC_FIELD("model", "tie_embeddings", kModel, kBool, model.tie_embeddings,
                   "LM head shares the embedding weight", kNone, kNone),
      SchemaEntry{"model",
                  "split_points",
                  Layer::kModel,
                  ValueType::kSplitPoints,
                  "first layer of stages 1..pp-1, or \"auto\" (even split)",
                  kNone,
                  kNone,
                  {},
                  split_points_get,
                  split_points_set},
      // [trainer]
      BIGMAC_FIELD("trainer", "kind", kTrainer, kString, trainer.kind,
                   "builtin (bigmac-train) or command (your program)", kNone, kNone, "builtin",
                   "command"),
      BIGMAC_FIELD("trainer", "binary", kTrainer, kString, trainer.binary,
                   "path of bigmac-train (empty: next to bigmac-bringup)", kNone, kNone),
      BIGMAC_FIELD("trainer", "command", kTrainer, kStringList, trainer.command,
                   "argv template of an external trainer, with {placeholders}", kNone, kNone),
      BIGMAC_FIELD("trainer", "log_format", kTrainer, kString, trainer.log_format,
                   "how rank output is parsed", kNone, kNone, "auto", "bigmac", "kv", "megatron",
                   "torchtitan", "regex", "pydict", "plain"),
      BIGMAC_FIELD("trainer", "gate_config_format", kTrainer, kString, trainer.gate_config_format,
                   "format of the per-gate config file", kNone, kNone, "toml", "yaml"),
      BIGMAC_FIELD("trainer", "probe", kTrainer, kBool, trainer.probe,
                   "put the zero-change probe (probe/) on the ranks' PYTHONPATH; unset: on for "
                   "a command run by Python, off for bigmac-train",
                   kNone, kNone),
      BIGMAC_FIELD("trainer", "batch_scope", kTrainer, kString, trainer.batch_scope,
                   "what {micro_batch_size} means to the program: one process's micro-batch, or "
                   "the global batch it divides by the world size",
                   kNone, kNone, "process", "global"),
      BIGMAC_FIELD("trainer", "accum_scope", kTrainer, kString, trainer.accum_scope,
                   "what {grad_accum} means: each process's micro-batches per step, or the "
                   "single-process count the program divides by the world size",
                   kNone, kNone, "process", "divided"),
      BIGMAC_FIELD("trainer", "max_steps_offset", kTrainer, kInt, trainer.max_steps_offset,
                   "steps the program runs beyond {max_steps} (1: --max_iters N runs 0..N); "
                   "the gates hand max_steps minus this",
                   0, 1000000),
      BIGMAC_FIELD("trainer", "loss_rank", kTrainer, kInt, trainer.loss_rank,
                   "the rank whose own printed loss is the run's when several ranks print; a "
                   "gate without that rank (or where it logs no step) takes the lowest that does",
                   0, 1048575),
      BIGMAC_FIELD("trainer", "fresh_paths", kTrainer, kStringList, trainer.fresh_paths,
                   "files the program resumes from when they exist, at paths no flag moves: "
                   "each gate moves them aside before its ranks start and back after",
                   kNone, kNone),
      // [faults]
      BIGMAC_FIELD("faults", "nan_at_step", kFaults, kInt, faults.nan_at_step,
                   "loss becomes NaN at this step (-1: off)", -1, kNone),
      BIGMAC_FIELD("faults", "grad_blowup", kFaults, kFloat, faults.grad_blowup,
                   "gradients scaled by F^step (0: off)", 0, kNone),
      BIGMAC_FIELD("faults", "skip_step_log", kFaults, kInt, faults.skip_step_log,
                   "this step's log line is not written (-1: off)", -1, kNone),
      BIGMAC_FIELD("faults", "dup_step_log", kFaults, kInt, faults.dup_step_log,
                   "this step's log line is written twice (-1: off)", -1, kNone),
      BIGMAC_FIELD("faults", "lr_scale_by_world", kFaults, kBool, faults.lr_scale_by_world,
                   "learning rate multiplied by world size", kNone, kNone),
      BIGMAC_FIELD("faults", "crash_rank", kFaults, kString, faults.crash_rank,
                   "\"R:K\": rank R aborts at step K", kNone, kNone),
      BIGMAC_FIELD("faults", "hang_rank", kFaults, kString, faults.hang_rank,
                   "\"R:K\": rank R blocks at step K (K = -1: before rendezvous)", kNone, kNone),
      BIGMAC_FIELD("faults", "world_size_offset", kFaults, kInt, faults.world_size_offset,
                   "every rank is told WORLD_SIZE + N", -kMaxProcsPerNode, kMaxProcsPerNode),
      BIGMAC_FIELD("faults", "master_port_offset", kFaults, kString, faults.master_port_offset,
                   "\"R:N\": rank R uses MASTER_PORT + N", kNone, kNone),
      BIGMAC_FIELD("faults", "all_ranks_checkpoint", kFaults, kBool, faults.all_ranks_checkpoint,
                   "every rank writes a checkpoint", kNone, kNone),
      BIGMAC_FIELD("faults", "split_out_of_range", kFaults, kBool, faults.split_out_of_range,
                   "a split point >= num_layers (a stage gets no layers)", kNone, kNone),
      BIGMAC_FIELD("faults", "boundary_seq_trim", kFaults, kInt, faults.boundary_seq_trim,
                   "stage 0 drops N positions before sending", 0, kNone),
      BIGMAC_FIELD("faults", "boundary_dtype", kFaults, kString, faults.boundary_dtype,
                   "sender casts activations to this dtype", kNone, kNone, "", "bf16", "float16"),
      BIGMAC_FIELD("faults", "ragged_microbatch", kFaults, kBool, faults.ragged_microbatch,
                   "micro-batches that do not divide the batch, unpadded", kNone, kNone),
      BIGMAC_FIELD("faults", "middle_stage_loss", kFaults, kBool, faults.middle_stage_loss,
                   "a middle stage computes a loss", kNone, kNone),
      BIGMAC_FIELD("faults", "stage_stall", kFaults, kString, faults.stage_stall,
                   "\"S:K\": stage S stops at step K", kNone, kNone),
      BIGMAC_FIELD("faults", "untied_sync", kFaults, kBool, faults.untied_sync,
                   "tied weights are not synchronised across stages", kNone, kNone),
      BIGMAC_FIELD("faults", "unsharded_data", kFaults, kBool, faults.unsharded_data,
                   "every data-parallel replica reads replica 0's samples", kNone, kNone),
      BIGMAC_FIELD("faults", "unreduced_grads", kFaults, kBool, faults.unreduced_grads,
                   "the replicas' gradients are never all-reduced", kNone, kNone),
      BIGMAC_FIELD("faults", "rank_seeded_init", kFaults, kBool, faults.rank_seeded_init,
                   "each replica initialises its model from seed + its dp rank", kNone, kNone),
      BIGMAC_FIELD("faults", "summed_grads", kFaults, kBool, faults.summed_grads,
                   "the replicas' gradients are summed, not averaged (not with pp > 1)", kNone,
                   kNone),
      BIGMAC_FIELD("faults", "extra_collective", kFaults, kString, faults.extra_collective,
                   "\"R:K\": rank R calls a barrier at step K that no other rank calls (a desync)",
                   kNone, kNone),
      BIGMAC_FIELD("faults", "collective_shape", kFaults, kString, faults.collective_shape,
                   "\"R:K\": rank R's all-reduce at the end of step K holds one element more "
                   "than the other ranks'",
                   kNone, kNone),
      // [trace]
      BIGMAC_FIELD("trace", "shapes", kTrace, kBool, trace.shapes,
                   "log shape events at stage boundaries", kNone, kNone),
  };
  return table;
}

#undef BIGMAC_ABOVE
#undef BIGMAC_FIELD
#undef BIGMAC_ENTRY

constexpr std::string_view kTables[] = {"launch",   "launch.slurm", "launch.accelerate",
                                        "parallel", "train",        "model",
                                        "trainer",  "faults",       "trace"};

}  // namespace

std::string_view layer_name(Layer layer) {
  switch (layer) {
    case Layer::kLaunch:
      return "launch";
    case Layer::kSchedule:
      return "schedule";
    case Layer::kModel:
      return "model";
    case Layer::kTrainer:
      return "trainer";
    case Layer::kFaults:
      return "faults";
    case Layer::kTrace:
      return "trace";
  }
  return "?";
}

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kBool:
      return "a boolean";
    case ValueType::kInt:
      return "an integer";
    case ValueType::kFloat:
      return "a number";
    case ValueType::kString:
      return "a string";
    case ValueType::kStringList:
      return "an array of strings";
    case ValueType::kSplitPoints:
      return "\"auto\" or an array of integers";
  }
  return "?";
}

std::string SchemaEntry::full_key() const { return std::string(table) + "." + std::string(key); }

std::string SchemaEntry::env_name() const {
  std::string name = "BIGMAC_" + std::string(table) + "_" + std::string(key);
  // [launch.slurm] keys become BIGMAC_LAUNCH_SLURM_<KEY>.
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) {
    return ch == '.' ? '_' : static_cast<char>(std::toupper(ch));
  });
  return name;
}

std::span<const SchemaEntry> schema() { return entries(); }

const SchemaEntry* find_entry(std::string_view table, std::string_view key) {
  for (const SchemaEntry& e : entries()) {
    if (e.table == table && e.key == key) return &e;
  }
  return nullptr;
}

std::span<const std::string_view> schema_tables() { return kTables; }

std::optional<std::string_view> derived_explanation(std::string_view key) {
  if (key == "dp" || key == "dp_size") {
    return "dp is derived: dp = world_size / (pp_size × tp_size), with world_size = "
           "launch.nnodes × launch.nproc_per_node; change those instead";
  }
  if (key == "world_size") {
    return "world_size is derived: launch.nnodes × launch.nproc_per_node; set those instead";
  }
  if (key == "global_batch" || key == "global_batch_size") {
    return "the global batch is derived: train.micro_batch_size × "
           "train.gradient_accumulation_steps × dp; change one of those instead";
  }
  return std::nullopt;
}

}  // namespace bigmac::config
