#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "launch/launch_plan.h"
#include "launch/launch_planner.h"

namespace bigmac::launch {

/// The program bigmac-rank-env next to the running program (/proc/self/exe's folder).
std::string default_rank_env_program();

/// The command that starts torchrun's agent. A trainer run by a Python interpreter
/// (`/venv/bin/python train.py`) gets that interpreter's own torchrun, `python -m
/// torch.distributed.run`: agent and workers then share one torch, where the torchrun first on
/// PATH may belong to another (a torch 1.13 agent's store hangs torch 2.x workers at their
/// rendezvous). Any other trainer gets `torchrun_program`.
std::vector<std::string> torchrun_agent_program(const std::string& trainer_program,
                                                const std::string& torchrun_program);

/// One torchrun agent (node `node_rank` of plan.nnodes). With one node it is torchrun's
/// standalone form; with several, a c10d rendezvous at master_addr:master_port, each worker
/// wrapped by bigmac-rank-env so that its output lands in rank<R>.stdout/.stderr. Under
/// slurm+torchrun `node_rank` and the endpoint are placeholders the per-node wrapper fills in.
std::vector<std::string> torchrun_agent_argv(const LaunchPlan& plan, const PlanInputs& inputs,
                                             const std::string& node_rank,
                                             const std::string& endpoint,
                                             const std::vector<std::string>& trainer_argv);

/// `accelerate launch` for the whole gate on this host (launch.launcher = "accelerate"), or an
/// error naming trainer.command when the trainer is no script accelerate can run. With several
/// processes it is accelerate's multi-process launcher (`--multi_gpu`, which is
/// torch.distributed.run: no restarts, each worker's stdout and stderr in files under
/// `<log_dir>/torchrun` and on the console with a `[default<i>]:` prefix); with one it runs the
/// program itself, as accelerate does (its output is rank 0's). On CPU devices one process gets
/// `--cpu`; several get ACCELERATE_USE_CPU from accelerate_environment, since accelerate
/// refuses `--cpu` with `--multi_gpu`. [launch.accelerate] adds its config file and options.
Expected<std::vector<std::string>> accelerate_launch_argv(
    const LaunchPlan& plan, const config::LaunchConfig& launch, const PlanInputs& inputs,
    const std::vector<std::string>& trainer_argv);

/// `accelerate launch`'s options that choose the kind of run (--multi_gpu, --cpu, --use_fsdp,
/// --use_deepspeed, --use_megatron_lm, --tpu; dashes or underscores): accelerate takes one.
bool accelerate_run_kind_option(const std::string& word);

/// What the accelerate agent's environment adds for the workers: ACCELERATE_USE_CPU=true on
/// CPU devices with several processes (without it a worker's Accelerator that was not given
/// cpu=True finds no GPU and runs alone, DistributedType.NO, in the launcher's world).
std::map<std::string, std::string> accelerate_environment(const LaunchPlan& plan);

/// srun for the whole gate: job options outside an allocation, the task layout, --label, the
/// [launch.slurm] options, then bigmac-rank-env in front of `program`.
std::vector<std::string> srun_argv(const LaunchPlan& plan, const config::LaunchConfig& launch,
                                   const PlanInputs& inputs, bool explicit_master_addr,
                                   const std::vector<std::string>& program);

}  // namespace bigmac::launch
