#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "proc/rank_process.h"

namespace bigmac::launch {

/// Who starts the ranks (config `launch.launcher`).
enum class LauncherKind {
  kBuiltin,        ///< the orchestrator starts every rank on this host
  kTorchrun,       ///< torchrun agents on this host (nnodes > 1: one agent per simulated node)
  kSlurm,          ///< srun, one task per rank, through bigmac-rank-env
  kSlurmTorchrun,  ///< srun, one task per node running a torchrun agent (c10d rendezvous)
  /// `accelerate launch` on this host, one node: with several processes its torch.distributed.run
  /// agent starts the workers (as torchrun's), with one it runs the program itself
  kAccelerate,
};

std::string_view launcher_name(LauncherKind kind);

/// Whether srun starts the ranks.
inline bool uses_slurm(LauncherKind kind) {
  return kind == LauncherKind::kSlurm || kind == LauncherKind::kSlurmTorchrun;
}

/// Whether one process on this host is a torch.distributed.run agent that starts the workers,
/// prefixes their console lines with `[default<i>]:` and prints torchrun's failure summary:
/// torchrun, and accelerate launch with more than one process (its multi-process launcher is
/// torch.distributed.run, run inside it).
inline bool elastic_agent(LauncherKind kind, int world_size) {
  return kind == LauncherKind::kTorchrun || (kind == LauncherKind::kAccelerate && world_size > 1);
}

/// One rank as the trainer will see it: its identity, device and environment.
struct RankAssignment {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  std::string device;  ///< "cpu" or "cuda:<id>" (id as the orchestrator sees it)
  /// The distributed environment of this rank (MASTER_ADDR, RANK, ...). With the builtin
  /// launcher it is exactly what the rank gets; with torchrun/srun the launcher derives it.
  std::map<std::string, std::string> env;
  std::filesystem::path log_path;  ///< the trainer's own log file (the `{log_file}` value)
  /// Files the rank writes its own stdout/stderr to (bigmac-rank-env --output, when torchrun
  /// agents of several nodes would mix them); followed like `log_path`. Empty: none.
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
  /// The probe's events for this rank (BIGMAC_PROBE_LOG, docs/probe.md); empty: no probe.
  std::filesystem::path probe_path;
};

/// The Slurm side of a plan (slurm and slurm+torchrun launchers).
struct SlurmJob {
  /// Started inside an allocation (sbatch, salloc): srun adds a step to job `job_id`. Outside,
  /// srun makes an allocation of its own, named `job_name`.
  bool inside_allocation = false;
  std::string job_id;
  std::string job_name;  ///< srun --job-name, unique per attempt
  /// launch.master_addr was set: ranks meet there, not at the first node of the step.
  bool explicit_master_addr = false;
  std::string scancel = "scancel";
  std::string scontrol = "scontrol";
  std::string sinfo = "sinfo";
  std::string partition;  ///< empty: the default partition
  int cpus_per_node = 0;  ///< what each node must offer the gate
  int gpus_per_node = 0;
};

/// One operating-system process the orchestrator starts. builtin: one per rank; torchrun: one
/// per node (this node); slurm: one srun for the whole job.
struct PlannedProcess {
  std::vector<int> ranks;  ///< global ranks whose output comes through this process
  proc::RankSpec spec;     ///< spec.rank is the first of `ranks`
};

/// The blueprint of a gate's launch (elastic's WorkerSpec): a value that can be printed,
/// stored in the run directory, checked by preflight and then executed.
struct LaunchPlan {
  LauncherKind launcher = LauncherKind::kBuiltin;
  std::string master_addr;
  int master_port = 0;
  int nnodes = 1;
  int nproc_per_node = 1;
  int world_size = 1;
  std::string devices = "cpu";  ///< cpu | cuda (auto already resolved)
  std::vector<RankAssignment> ranks;
  std::vector<PlannedProcess> processes;
  /// The trainer program (argv[0] of the trainer argv), checked by preflight.
  std::string trainer_program;
  /// bigmac-rank-env when the plan starts ranks through it (srun, several torchrun agents),
  /// checked by preflight; empty otherwise.
  std::string rank_env_program;
  std::filesystem::path log_dir;
  /// torchrun's --log_dir on one node: each worker's complete stdout.log and stderr.log are
  /// read from there (launch/torchrun_worker_files.h) instead of the console copy. Empty
  /// with other launchers, and with several agents (their workers write rank<R>.stdout).
  std::filesystem::path torchrun_log_dir;
  SlurmJob slurm;  ///< meaningful when uses_slurm(launcher)
};

/// Human-readable rendering for `bigmac-bringup plan`: one block per process, argv quoted for
/// display only (the launch itself never goes through a shell).
std::string render_text(const LaunchPlan& plan);

/// The plan as JSON, for the run directory (`launch-plan.json`).
nlohmann::json to_json(const LaunchPlan& plan);

/// The file name of the stored plan inside a gate attempt's folder.
inline constexpr const char* kLaunchPlanName = "launch-plan.json";

/// Writes to_json(plan) atomically to `path` (normally `<attempt dir>/launch-plan.json`).
Expected<void> write_plan(const LaunchPlan& plan, const std::filesystem::path& path);

/// Quotes one argument for display the way a POSIX shell would need it.
std::string quote_for_display(const std::string& arg);

/// An argv for display: each argument quoted as a POSIX shell would need, joined by spaces.
std::string join_argv(const std::vector<std::string>& argv);

}  // namespace bigmac::launch
