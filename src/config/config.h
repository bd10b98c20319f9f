#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"

namespace bigmac::config {

/// [launch.slurm]: what srun is asked for when the launcher is slurm or slurm+torchrun. Job
/// options (partition, account, time) only apply outside an allocation: inside one (sbatch or
/// salloc) the job already has them and srun starts a step in it.
struct SlurmConfig {
  std::string partition;  ///< empty: the cluster's default partition
  std::string account;    ///< empty: the user's default account
  std::string time;       ///< job time limit in srun's --time syntax ("00:30:00"); empty: default
  int gpus_per_node = 0;  ///< --gpus-per-node; 0: one GPU per task when devices = cuda, else none
  std::vector<std::string> extra_args;  ///< more srun arguments, one argv entry each
};

/// [launch.accelerate]: what `accelerate launch` is given besides the layout when the launcher
/// is accelerate (launch/launcher_commands.h).
struct AccelerateConfig {
  std::string config_file;              ///< --config_file; empty: accelerate's own default
  std::vector<std::string> extra_args;  ///< more `accelerate launch` options, one argv entry each
};

/// [launch]: consumed by the launcher and watchdog (docs/architecture.md §2).
struct LaunchConfig {
  int nnodes = 1;
  int nproc_per_node = 4;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;               ///< 0: a free port picked for each gate (launch/master_port.h)
  std::string devices = "cpu";       ///< cpu | cuda | auto
  std::string backend = "auto";      ///< auto | gloo | nccl
  std::string launcher = "builtin";  ///< builtin | torchrun | accelerate | slurm | slurm+torchrun
  int threads_per_rank = 1;          ///< torch intra-op threads of each rank (OMP_NUM_THREADS)
  double init_timeout_s = 60;        ///< rendezvous / process group creation limit
  double stall_timeout_s = 60;       ///< the most silence a rank is allowed after rendezvous
  double stall_min_s = 5;            ///< the adaptive stall limit's floor
  double stall_factor = 10;          ///< adaptive stall limit = factor × median step time
  bool pick_free_port = false;       ///< master_port taken: use the next free port above it
  SlurmConfig slurm;
  AccelerateConfig accelerate;

  int world_size() const { return nnodes * nproc_per_node; }
};

/// [parallel]: consumed by the schedule.
struct ParallelConfig {
  int pp_size = 1;
  int tp_size = 1;
  std::string schedule = "1f1b";  ///< 1f1b | gpipe
  int micro_batches = 0;          ///< pipeline micro-batches per step; derived = accum
};

/// [train]: consumed by the training loop.
struct TrainConfig {
  int micro_batch_size = 2;
  int gradient_accumulation_steps = 4;
  int seq_length = 32;
  std::int64_t seed = 1234;
  int max_steps = 20;
  double lr = 3e-3;
  int warmup_steps = 5;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  std::string dtype = "float32";
  std::string checkpoint_dir;  ///< empty: beside the log file
  int checkpoint_every = 0;    ///< 0: one checkpoint after the last step
};

/// [model]: consumed by the model builder.
struct ModelConfig {
  int num_layers = 4;
  int hidden = 64;
  int heads = 4;
  int vocab = 64;
  int ffn_mult = 4;
  double init_std = 0.02;  ///< standard deviation of the initial weight matrices
  bool tie_embeddings = true;
  bool split_points_auto = true;
  std::vector<int> split_points;  ///< effective (auto already expanded), pp_size - 1 entries
};

/// [trainer]: which program is brought up.
struct TrainerSection {
  std::string kind = "builtin";  ///< builtin | command
  std::string binary;            ///< builtin: path of bigmac-train; empty = next to bigmac-bringup
  std::vector<std::string> command;  ///< kind = command: argv template with {placeholders}
  std::string log_format = "auto";   ///< auto | bigmac | kv | megatron | torchtitan | regex |
                                     ///< pydict | plain
  std::string gate_config_format = "toml";  ///< toml | yaml
  /// The zero-change probe (probe/, docs/probe.md) on the ranks' PYTHONPATH. Left at its
  /// default (unset) it is decided per program: on for a command run by Python, off for
  /// bigmac-train (launch/trainer_probe.h).
  bool probe = false;
  // The program model (what `adopt` measured of how the program reads what the gates hand
  // it): every gate plans from these, so a program is not assumed to work like bigmac-train.
  /// What `{micro_batch_size}` means to the program: "process" (one rank's micro-batch) or
  /// "global" (the batch of all ranks together, which the program divides by the world size).
  std::string batch_scope = "process";
  /// What `{grad_accum}` means: "process" (each rank's micro-batches per step) or "divided"
  /// (the single-process count, which the program divides by the world size itself).
  std::string accum_scope = "process";
  /// The program runs `{max_steps}` + this many optimizer steps (1 for `--max_iters N` that
  /// runs iterations 0..N): the gates hand max_steps minus this.
  int max_steps_offset = 0;
  /// The rank whose own printed numbers (loss, grad norm) are the run's when several print.
  int loss_rank = 0;
  /// Files the program resumes from when they exist, at paths no flag moves (relative to the
  /// ranks' working directory): each gate starts without them (attempt/fresh_paths.h).
  std::vector<std::string> fresh_paths;
};

/// [faults]: real failures the built-in trainer injects (empty/0/false = off).
struct FaultsConfig {
  int nan_at_step = -1;
  double grad_blowup = 0;
  int skip_step_log = -1;
  int dup_step_log = -1;
  bool lr_scale_by_world = false;
  std::string crash_rank;  ///< "R:K"
  std::string hang_rank;   ///< "R:K", K = -1 before rendezvous
  int world_size_offset = 0;
  std::string master_port_offset;  ///< "R:N"
  bool all_ranks_checkpoint = false;
  bool split_out_of_range = false;
  int boundary_seq_trim = 0;
  std::string boundary_dtype;  ///< "" | bf16 | float16
  bool ragged_microbatch = false;
  bool middle_stage_loss = false;
  std::string stage_stall;  ///< "S:K"
  bool untied_sync = false;
  // Data-parallel faults: each breaks an invariant every correct data-parallel run keeps.
  bool unsharded_data = false;    ///< every replica reads replica 0's samples
  bool unreduced_grads = false;   ///< the replicas' gradients are never all-reduced
  bool rank_seeded_init = false;  ///< each replica initialises from seed + its dp rank
  bool summed_grads = false;      ///< the replicas' gradients are summed, not averaged
  // Collective faults: the ranks' collectives part (a desync), each caught by the ledger.
  std::string extra_collective;  ///< "R:K": rank R calls a barrier no other rank calls
  std::string collective_shape;  ///< "R:K": rank R's step all-reduce holds one element more
};

/// [trace]
struct TraceConfig {
  bool shapes = false;
};

/// Values computed from the others, never written by the user.
struct DerivedConfig {
  int world_size = 4;
  int dp = 4;             ///< world_size / (pp_size × tp_size)
  int global_batch = 32;  ///< micro_batch_size × gradient_accumulation_steps × dp
  int micro_batches = 4;  ///< effective pipeline micro-batches
};

/// The effective configuration as typed values, plus every setting with its provenance.
struct Config {
  LaunchConfig launch;
  ParallelConfig parallel;
  TrainConfig train;
  ModelConfig model;
  TrainerSection trainer;
  FaultsConfig faults;
  TraceConfig trace;
  DerivedConfig derived;
  /// `[logs.fields]`: field name -> regex with one capture group.
  std::map<std::string, std::string> log_fields;
  /// Where each `[logs.fields]` entry was set, for errors that name it.
  std::map<std::string, Origin> log_field_origins;
  /// `[trainer.env]`: variables exported to every rank, over the tool's defaults
  /// (PYTHONUNBUFFERED=1); name -> value with where it was set.
  std::map<std::string, Setting> trainer_env;
  /// `[gates.<id>]` overrides, kept raw for the gate engine: gate id -> key -> setting.
  std::map<std::string, std::map<std::string, Setting>> gate_overrides;
  /// Every schema key ("train.seed") with its effective value and where it came from.
  SettingTable settings;
};

/// Where the configuration comes from. Precedence: default < file < environment < --set.
struct ConfigSources {
  std::optional<std::string> file;         ///< TOML file; none = built-in defaults only
  std::vector<std::string> overrides;      ///< "table.key=value", in command-line order
  std::map<std::string, std::string> env;  ///< BIGMAC_<TABLE>_<KEY> variables (see read_env)
};

/// The BIGMAC_<TABLE>_<KEY> variables of the current process environment that name schema keys.
std::map<std::string, std::string> read_env();

/// Loads, layers, derives and checks. All violations are returned together.
tl::expected<Config, Errors> load_config(const ConfigSources& sources);

}  // namespace bigmac::config
