#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "launch/launch_plan.h"
#include "launch/slurm_query.h"

namespace bigmac::launch {

/// What the planner needs besides the configuration.
struct PlanInputs {
  /// The trainer's argv (bigmac-train: `[<path>, --config, <gate.toml>, --log-file, {log_file}]`,
  /// or an external command with the gate engine's placeholders already filled in). Per rank the
  /// planner replaces `{rank}`, `{local_rank}`, `{world_size}` and `{log_file}`. torchrun and
  /// srun start one argv for many ranks: there only `{world_size}` and `{log_file}` are replaced
  /// and `{rank}` is left for the trainer to expand from $RANK.
  std::vector<std::string> trainer_argv;
  std::filesystem::path log_dir;      ///< the gate attempt's folder; rank logs go here
  std::filesystem::path working_dir;  ///< empty: the orchestrator's
  /// CUDA device ids visible to the orchestrator (its CUDA_VISIBLE_DEVICES, or 0..n-1 from
  /// nvidia-smi). Local rank i gets the i-th. Used when devices is cuda, or auto with GPUs.
  std::vector<std::string> visible_devices;
  /// builtin + cuda: give each rank exactly its device in CUDA_VISIBLE_DEVICES (the rank then
  /// sees it as cuda:0). false keeps the orchestrator's list and relies on LOCAL_RANK, for
  /// trainers that call set_device(LOCAL_RANK).
  bool one_device_per_rank = true;
  std::map<std::string, std::string> extra_env;  ///< BIGMAC_* values, for every rank
  /// The ranks' probe logs with `{rank}` in the name (the BIGMAC_PROBE_LOG in extra_env);
  /// empty: the probe is off.
  std::filesystem::path probe_log;
  std::string torchrun_program = "torchrun";
  /// accelerate's command-line tool, for a trainer not run by a Python interpreter (one that
  /// is gets its own interpreter's `-m accelerate.commands.launch`).
  std::string accelerate_program = "accelerate";
  std::string srun_program = "srun";
  std::string scontrol_program = "scontrol";
  std::string scancel_program = "scancel";
  std::string sinfo_program = "sinfo";
  /// bigmac-rank-env (the exec-wrapper under srun and torchrun's agents of several nodes);
  /// empty: the one next to this program.
  std::string rank_env_program;
  /// The orchestrator's environment, where SLURM_JOB_ID says whether it runs inside an
  /// allocation (tests pass a map).
  EnvLookup environment = [](const char* name) { return std::getenv(name); };
  /// srun's --job-name (outside an allocation it names the job, which scancel then finds);
  /// empty: bigmac-<pid>-<log_dir's name>.
  std::string job_name;
};

/// Plans the ranks of one gate from the [launch] layer. Input errors name the config key.
/// builtin starts processes on this host only and needs launch.nnodes = 1; torchrun with
/// nnodes > 1 starts one agent per node on this host (c10d rendezvous), simulating nodes;
/// slurm and slurm+torchrun start them through srun on the nodes of an allocation; accelerate
/// runs `accelerate launch` for the whole gate on this host (nnodes = 1).
Expected<LaunchPlan> plan_launch(const config::Config& config, const PlanInputs& inputs);

/// What the launcher refuses of a gate's configuration whatever the trainer: an unknown
/// launcher or device kind, and several nodes under a launcher that starts ranks on this host
/// only. plan_launch and the configuration check (gates/configuration_check) both use it.
Errors launch_config_errors(const config::Config& config);

/// Replaces `{name}` for every entry of `values` in `text`; other braces are left alone.
std::string substitute(std::string text, const std::map<std::string, std::string>& values);

}  // namespace bigmac::launch
