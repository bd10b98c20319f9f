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
enum class LauncherKind { kBuiltin, kTorchrun, kSlurm };

std::string_view launcher_name(LauncherKind kind);

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
  std::filesystem::path log_dir;
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

}  // namespace bigmac::launch
