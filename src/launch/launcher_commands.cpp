#include "launch/launcher_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

namespace bigmac::launch {
namespace {

bool is_python_script(const std::string& program) {
  return program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// python, python3, python3.11, pypy3: an interpreter whose torch the agent must share.
bool is_python_interpreter(const std::string& program) {
  const std::string name = std::filesystem::path(program).filename().string();
  for (const std::string_view stem : {"python", "pypy"}) {
    if (name.rfind(stem, 0) != 0) continue;
    const std::string_view rest = std::string_view(name).substr(stem.size());
    if (rest.find_first_not_of("0123456789.") == std::string_view::npos) return true;
  }
  return false;
}

std::string rank_env(const PlanInputs& inputs) {
  return inputs.rank_env_program.empty() ? default_rank_env_program() : inputs.rank_env_program;
}

}  // namespace

std::string default_rank_env_program() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("bigmac-rank-env") : (self.parent_path() / "bigmac-rank-env").string();
}

std::vector<std::string> torchrun_agent_program(const std::string& trainer_program,
                                                const std::string& torchrun_program) {
  if (is_python_interpreter(trainer_program)) {
    return {trainer_program, "-m", "torch.distributed.run"};
  }
  return {torchrun_program};
}

std::vector<std::string> torchrun_agent_argv(const LaunchPlan& plan, const PlanInputs& inputs,
                                             const std::string& node_rank,
                                             const std::string& endpoint,
                                             const std::vector<std::string>& trainer_argv) {
  // srun's agents always meet in a c10d rendezvous on the step's first node, found per node.
  const bool several = plan.nnodes > 1 || plan.launcher == LauncherKind::kSlurmTorchrun;
  std::vector<std::string> argv = torchrun_agent_program(
      trainer_argv.empty() ? std::string() : trainer_argv.front(), inputs.torchrun_program);
  append(argv, {"--nnodes", std::to_string(plan.nnodes), "--nproc_per_node",
                std::to_string(plan.nproc_per_node)});
  if (several) {
    // c10d: the agents meet at the endpoint and number themselves; the agent whose host
    // matches the endpoint serves the store (on one host the first to bind it).
    append(argv, {"--node_rank", node_rank, "--rdzv_backend", "c10d", "--rdzv_endpoint", endpoint,
                  "--rdzv_id", plan.slurm.job_name});
  } else {
    append(argv, {"--node_rank", "0", "--master_addr", plan.master_addr, "--master_port",
                  std::to_string(plan.master_port)});
  }
  // No restarts: a failure is evidence for the gate, not something to retry. A 1 s monitor
  // interval (default 5 s) lets a worker's exit reach us quickly.
  // --tee 1 copies each worker's stdout to its file and to our pipe with a [default<i>]:
  // prefix, which the log parser uses to attribute lines to ranks. torch 1.13 on Python 3.11
  // cannot parse the values 0 and 3 (its Std IntFlag iteration skips NONE and ALL), and 0 is
  // the default of --redirects, so stderr is redirected (2) to the per-rank files explicitly.
  append(argv, {"--max_restarts", "0", "--monitor_interval", "1", "--redirects", "2", "--tee", "1",
                "--log_dir",
                (inputs.log_dir / (several ? "torchrun-node" + node_rank : "torchrun")).string()});
  const bool python = is_python_script(plan.trainer_program);
  if (!several) {
    if (!python) argv.push_back("--no_python");
    append(argv, trainer_argv);
    return argv;
  }
  // [default<i>] names a local rank, the same on every node: with several agents each worker
  // writes rank<R>.stdout/.stderr of its own instead, through the wrapper.
  append(argv, {"--no_python", rank_env(inputs), "--from", "torchrun", "--output",
                inputs.log_dir.string(), "--"});
  if (python) append(argv, {"python3", "-u"});
  append(argv, trainer_argv);
  return argv;
}

bool accelerate_run_kind_option(const std::string& word) {
  if (word.rfind("--", 0) != 0) return false;
  std::string name = word.substr(2, word.find('=') - 2);  // --use-fsdp=x: use_fsdp
  std::replace(name.begin(), name.end(), '-', '_');
  return name == "multi_gpu" || name == "cpu" || name == "use_fsdp" || name == "use_deepspeed" ||
         name == "use_megatron_lm" || name == "tpu";
}

Expected<std::vector<std::string>> accelerate_launch_argv(
    const LaunchPlan& plan, const config::LaunchConfig& launch, const PlanInputs& inputs,
    const std::vector<std::string>& trainer_argv) {
  const std::string first = trainer_argv.empty() ? std::string() : trainer_argv.front();
  const bool interpreter = is_python_interpreter(first);
  // The program's own interpreter runs accelerate, so that the agent and the workers share one
  // torch (as for torchrun's agent, torchrun_agent_program).
  std::vector<std::string> argv =
      interpreter ? std::vector<std::string>{first, "-m", "accelerate.commands.launch"}
                  : std::vector<std::string>{inputs.accelerate_program, "launch"};
  append(argv, {"--num_processes", std::to_string(plan.world_size), "--num_machines", "1",
                "--machine_rank", "0", "--main_process_ip", plan.master_addr, "--main_process_port",
                std::to_string(plan.master_port)});
  // accelerate takes one kind of run: --multi_gpu, --cpu, or --use_fsdp/--use_deepspeed/...
  // among the user's options, else its config file's distributed_type (which it reads only when
  // none of those is given). The tool names the kind only when the user named none.
  const bool kind_chosen =
      !launch.accelerate.config_file.empty() ||
      std::any_of(launch.accelerate.extra_args.begin(), launch.accelerate.extra_args.end(),
                  [](const std::string& a) { return accelerate_run_kind_option(a); });
  if (plan.world_size > 1) {
    // As torchrun's agent (torchrun_agent_argv): no restarts, a 1 s monitor, and each worker's
    // stdout and stderr in files (accelerate launch has --tee, not --redirects; tee 3 redirects
    // both streams and copies them to the console).
    if (!kind_chosen) argv.push_back("--multi_gpu");
    append(argv, {"--max_restarts", "0", "--monitor_interval", "1", "--tee", "3", "--log_dir",
                  (inputs.log_dir / "torchrun").string()});
  } else if (plan.devices == "cpu" && !kind_chosen) {
    argv.push_back("--cpu");
  }
  if (!launch.accelerate.config_file.empty()) {
    append(argv, {"--config_file", launch.accelerate.config_file});
  }
  append(argv, launch.accelerate.extra_args);
  if (!interpreter) {
    // A script accelerate runs with its own interpreter; any other program as it is.
    if (!is_python_script(first)) argv.push_back("--no_python");
    append(argv, trainer_argv);
    return argv;
  }
  const std::vector<std::string> rest(trainer_argv.begin() + 1, trainer_argv.end());
  if (rest.size() >= 2 && rest.front() == "-m") {
    argv.push_back("--module");  // python -m MODULE: accelerate's --module MODULE
    argv.insert(argv.end(), rest.begin() + 1, rest.end());
    return argv;
  }
  if (rest.empty() || rest.front().empty() || rest.front().front() == '-') {
    Error e = make_error(
        ErrorKind::kConfig,
        fmt::format("the accelerate launcher runs a script, but the trainer command is `{}`",
                    join_argv(trainer_argv)),
        "write the command as [\"python\", \"SCRIPT.py\", ...] or [\"python\", \"-m\", "
        "\"MODULE\", ...] (accelerate launch passes no interpreter options), or use "
        "launcher = \"torchrun\"");
    e.key = "trainer.command";
    return tl::unexpected(e);
  }
  append(argv, rest);
  return argv;
}

std::map<std::string, std::string> accelerate_environment(const LaunchPlan& plan) {
  if (plan.devices == "cpu" && plan.world_size > 1) return {{"ACCELERATE_USE_CPU", "true"}};
  return {};
}

std::vector<std::string> srun_argv(const LaunchPlan& plan, const config::LaunchConfig& launch,
                                   const PlanInputs& inputs, bool explicit_master_addr,
                                   const std::vector<std::string>& program) {
  const bool per_node = plan.launcher == LauncherKind::kSlurmTorchrun;
  const config::SlurmConfig& sc = launch.slurm;
  std::vector<std::string> argv = {inputs.srun_program};
  // Inside an allocation the job already has its partition, account and time limit.
  if (!plan.slurm.inside_allocation) {
    if (!sc.partition.empty()) argv.push_back("--partition=" + sc.partition);
    if (!sc.account.empty()) argv.push_back("--account=" + sc.account);
    if (!sc.time.empty()) argv.push_back("--time=" + sc.time);
  }
  // --label prefixes every line with "<task>: "; --kill-on-bad-exit ends the step when one
  // task fails, as the builtin launcher stops the others.
  append(argv, {"--job-name=" + plan.slurm.job_name, fmt::format("--nodes={}", plan.nnodes),
                fmt::format("--ntasks={}", per_node ? plan.nnodes : plan.world_size),
                fmt::format("--ntasks-per-node={}", per_node ? 1 : plan.nproc_per_node),
                fmt::format("--cpus-per-task={}",
                            per_node ? plan.slurm.cpus_per_node : launch.threads_per_rank),
                "--kill-on-bad-exit=1", "--label", "--unbuffered", "--export=ALL"});
  if (sc.gpus_per_node > 0) {
    argv.push_back(fmt::format("--gpus-per-node={}", sc.gpus_per_node));
  } else if (plan.devices == "cuda") {
    argv.push_back(per_node ? fmt::format("--gpus-per-node={}", plan.nproc_per_node)
                            : std::string("--gpus-per-task=1"));
  }
  append(argv, sc.extra_args);
  append(argv, {rank_env(inputs), "--from", per_node ? "slurm-node" : "slurm", "--master-port",
                std::to_string(plan.master_port), "--scontrol", inputs.scontrol_program});
  if (explicit_master_addr) append(argv, {"--master-addr", plan.master_addr});
  argv.push_back("--");
  append(argv, program);
  return argv;
}

}  // namespace bigmac::launch
