#include "launch/launch_planner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <string_view>

#include "config/layering.h"
#include "core/edit_distance.h"
#include "launch/launcher_commands.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;

Error config_error(std::string key, std::string message, std::string hint = {}) {
  Error e = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
  e.key = std::move(key);
  return e;
}

Expected<LauncherKind> parse_launcher(const std::string& name) {
  if (name == "builtin") return LauncherKind::kBuiltin;
  if (name == "torchrun") return LauncherKind::kTorchrun;
  if (name == "slurm") return LauncherKind::kSlurm;
  if (name == "slurm+torchrun") return LauncherKind::kSlurmTorchrun;
  if (name == "accelerate") return LauncherKind::kAccelerate;
  static constexpr std::array<std::string_view, 5> kNames = {"builtin", "torchrun", "accelerate",
                                                             "slurm", "slurm+torchrun"};
  auto near = closest_match(name, kNames);
  return tl::unexpected(config_error(
      "launch.launcher",
      fmt::format("unknown launcher '{}'; expected builtin, torchrun, accelerate, slurm or "
                  "slurm+torchrun",
                  name),
      near ? fmt::format("did you mean '{}'?", *near) : std::string()));
}

std::vector<std::string> substituted(const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& values) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const std::string& a : argv) out.push_back(substitute(a, values));
  return out;
}

std::string rank_log_name(const std::string& rank) { return "rank" + rank + ".log"; }

// The environment torchrun gives a worker, so that a trainer cannot tell builtin from torchrun.
std::map<std::string, std::string> distributed_env(const LaunchPlan& plan, int rank, int local_rank,
                                                   int node_rank) {
  return {{"MASTER_ADDR", plan.master_addr},
          {"MASTER_PORT", std::to_string(plan.master_port)},
          {"WORLD_SIZE", std::to_string(plan.world_size)},
          {"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(plan.nproc_per_node)},
          {"GROUP_RANK", std::to_string(node_rank)}};
}

}  // namespace

std::string substitute(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string token = "{" + name + "}";
    for (std::size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + value.size())) {
      text.replace(at, token.size(), value);
    }
  }
  return text;
}

Errors launch_config_errors(const config::Config& config) {
  const config::LaunchConfig& lc = config.launch;
  Errors errors;
  auto launcher = parse_launcher(lc.launcher);
  if (!launcher) errors.push_back(launcher.error());
  if (lc.nnodes < 1 || lc.nproc_per_node < 1) {
    errors.push_back(config::error_at_setting(
        config.settings, "launch.nproc_per_node",
        fmt::format("nnodes = {} and nproc_per_node = {} must both be at least 1", lc.nnodes,
                    lc.nproc_per_node)));
  }
  if (launcher && *launcher == LauncherKind::kBuiltin && lc.nnodes != 1) {
    errors.push_back(config::error_at_setting(
        config.settings, "launch.nnodes",
        fmt::format("the builtin launcher starts every rank on this host, one node, but nnodes "
                    "= {}",
                    lc.nnodes),
        "use launcher = \"slurm\" or \"slurm+torchrun\" for several nodes, \"torchrun\" to "
        "simulate them on this host, or set nnodes = 1"));
  }
  if (launcher && *launcher == LauncherKind::kAccelerate && lc.nnodes != 1) {
    errors.push_back(config::error_at_setting(
        config.settings, "launch.nnodes",
        fmt::format("the accelerate launcher starts one node on this host, but nnodes = {}",
                    lc.nnodes),
        "use launcher = \"torchrun\" (it simulates several nodes on this host) or "
        "\"slurm+torchrun\", or set nnodes = 1"));
  }
  if (lc.devices != "auto" && lc.devices != "cpu" && lc.devices != "cuda") {
    errors.push_back(config::error_at_setting(
        config.settings, "launch.devices",
        fmt::format("unknown devices '{}'; expected cpu, cuda or auto", lc.devices)));
  }
  return errors;
}

Expected<LaunchPlan> plan_launch(const config::Config& config, const PlanInputs& inputs) {
  const config::LaunchConfig& lc = config.launch;
  if (Errors errors = launch_config_errors(config); !errors.empty()) {
    Error first = errors.front();
    for (std::size_t i = 1; i < errors.size(); ++i) first.message += "\n  " + errors[i].format();
    return tl::unexpected(first);
  }
  auto launcher = parse_launcher(lc.launcher);
  if (inputs.trainer_argv.empty()) {
    return tl::unexpected(config_error("trainer.command", "the trainer argv is empty"));
  }
  LaunchPlan plan;
  plan.launcher = *launcher;
  plan.master_addr = lc.master_addr;
  plan.master_port = lc.master_port;
  plan.nnodes = lc.nnodes;
  plan.nproc_per_node = lc.nproc_per_node;
  plan.world_size = lc.world_size();
  plan.trainer_program = inputs.trainer_argv.front();
  plan.log_dir = inputs.log_dir;
  plan.slurm.job_name = !inputs.job_name.empty() ? inputs.job_name
                                                 : fmt::format("bigmac-{}-{}", ::getpid(),
                                                               inputs.log_dir.filename().string());
  // An explicit master address is used as given; otherwise (or when it is a loopback address,
  // which other nodes cannot reach) srun's ranks meet at the first node of their step, which
  // bigmac-rank-env resolves there.
  const config::Setting* addr_setting = config.settings.find("launch.master_addr");
  const bool loopback = lc.master_addr == "localhost" || lc.master_addr == "::1" ||
                        lc.master_addr.rfind("127.", 0) == 0;
  const bool explicit_master_addr = addr_setting != nullptr &&
                                    addr_setting->origin.kind != config::SourceKind::kDefault &&
                                    !loopback;
  if (uses_slurm(plan.launcher)) {
    auto allocation = read_allocation(inputs.environment);
    if (!allocation) return tl::unexpected(allocation.error());
    plan.slurm.scancel = inputs.scancel_program;
    plan.slurm.scontrol = inputs.scontrol_program;
    plan.slurm.sinfo = inputs.sinfo_program;
    plan.slurm.partition = lc.slurm.partition;
    plan.slurm.explicit_master_addr = explicit_master_addr;
    plan.slurm.cpus_per_node = lc.nproc_per_node * lc.threads_per_rank;
    if (*allocation) {
      plan.slurm.inside_allocation = true;
      plan.slurm.job_id = (*allocation)->job_id;
    }
    if (!explicit_master_addr) {
      plan.master_addr = *allocation && !(*allocation)->nodes.empty()
                             ? (*allocation)->nodes.front()
                             : std::string("<first node of the step>");
    }
  }
  if (lc.devices == "auto") {
    plan.devices = inputs.visible_devices.empty() ? "cpu" : "cuda";
  } else {
    plan.devices = lc.devices;  // cpu or cuda: launch_config_errors refused anything else
  }
  const bool cuda = plan.devices == "cuda";
  if (uses_slurm(plan.launcher)) {
    plan.slurm.gpus_per_node = lc.slurm.gpus_per_node > 0 ? lc.slurm.gpus_per_node
                               : cuda                     ? lc.nproc_per_node
                                                          : 0;
  }
  // With several torchrun agents each worker writes its output to files of its own.
  const bool worker_files = (plan.launcher == LauncherKind::kTorchrun && plan.nnodes > 1) ||
                            plan.launcher == LauncherKind::kSlurmTorchrun;
  if (worker_files || uses_slurm(plan.launcher)) {
    plan.rank_env_program =
        inputs.rank_env_program.empty() ? default_rank_env_program() : inputs.rank_env_program;
  }
  auto device_id = [&](int local_rank) {
    return local_rank < static_cast<int>(inputs.visible_devices.size())
               ? inputs.visible_devices[local_rank]
               : std::to_string(local_rank);
  };

  std::map<std::string, std::string> common = inputs.extra_env;
  common["OMP_NUM_THREADS"] = std::to_string(lc.threads_per_rank);

  for (int node = 0; node < plan.nnodes; ++node) {
    for (int local = 0; local < plan.nproc_per_node; ++local) {
      RankAssignment r;
      r.rank = node * plan.nproc_per_node + local;
      r.local_rank = local;
      r.node_rank = node;
      r.device = cuda ? "cuda:" + device_id(local) : "cpu";
      r.env = common;
      r.env.merge(distributed_env(plan, r.rank, local, node));
      if (cuda && inputs.one_device_per_rank && plan.launcher == LauncherKind::kBuiltin) {
        r.env["CUDA_VISIBLE_DEVICES"] = device_id(local);
      }
      r.log_path = inputs.log_dir / rank_log_name(std::to_string(r.rank));
      if (!inputs.probe_log.empty()) {
        r.probe_path = substitute(inputs.probe_log.string(), {{"rank", std::to_string(r.rank)}});
      }
      if (worker_files) {
        r.stdout_path = inputs.log_dir / fmt::format("rank{}.stdout", r.rank);
        r.stderr_path = inputs.log_dir / fmt::format("rank{}.stderr", r.rank);
      }
      plan.ranks.push_back(std::move(r));
    }
  }

  const std::string world = std::to_string(plan.world_size);
  switch (plan.launcher) {
    case LauncherKind::kBuiltin:
      for (const RankAssignment& r : plan.ranks) {
        PlannedProcess p;
        p.ranks = {r.rank};
        p.spec.rank = r.rank;
        p.spec.argv =
            substituted(inputs.trainer_argv, {{"rank", std::to_string(r.rank)},
                                              {"local_rank", std::to_string(r.local_rank)},
                                              {"world_size", world},
                                              {"log_file", r.log_path.string()}});
        p.spec.env = r.env;
        p.spec.working_dir = inputs.working_dir;
        p.spec.stdout_path = inputs.log_dir / fmt::format("rank{}.stdout", r.rank);
        p.spec.stderr_path = inputs.log_dir / fmt::format("rank{}.stderr", r.rank);
        plan.processes.push_back(std::move(p));
      }
      break;
    case LauncherKind::kTorchrun: {
      const std::vector<std::string> worker_argv = substituted(
          inputs.trainer_argv, {{"world_size", world},
                                {"log_file", (inputs.log_dir / rank_log_name("{rank}")).string()}});
      const std::string endpoint = fmt::format("{}:{}", plan.master_addr, plan.master_port);
      if (plan.nnodes == 1) plan.torchrun_log_dir = inputs.log_dir / "torchrun";
      for (int node = 0; node < plan.nnodes; ++node) {
        PlannedProcess p;
        // Under c10d the agents number themselves: these are the ranks a node gets when the
        // agents meet in order; the workers' placement lines say which they really got.
        for (int local = 0; local < plan.nproc_per_node; ++local) {
          p.ranks.push_back(node * plan.nproc_per_node + local);
        }
        p.spec.rank = p.ranks.front();
        p.spec.argv =
            torchrun_agent_argv(plan, inputs, std::to_string(node), endpoint, worker_argv);
        p.spec.env = common;
        p.spec.working_dir = inputs.working_dir;
        const std::string name =
            plan.nnodes > 1 ? fmt::format("torchrun-node{}", node) : std::string("torchrun");
        p.spec.stdout_path = inputs.log_dir / (name + ".stdout");
        p.spec.stderr_path = inputs.log_dir / (name + ".stderr");
        plan.processes.push_back(std::move(p));
      }
      break;
    }
    case LauncherKind::kAccelerate: {
      // One accelerate launch for the gate: its torch.distributed.run agent starts every rank
      // (several), or it runs the program itself (one), whose output is then rank 0's.
      PlannedProcess p;
      for (const RankAssignment& r : plan.ranks) p.ranks.push_back(r.rank);
      p.spec.rank = p.ranks.front();
      auto argv = accelerate_launch_argv(
          plan, lc, inputs,
          substituted(inputs.trainer_argv,
                      {{"world_size", world},
                       {"log_file", (inputs.log_dir / rank_log_name("{rank}")).string()}}));
      if (!argv) return tl::unexpected(argv.error());
      p.spec.argv = std::move(*argv);
      p.spec.env = common;
      p.spec.env.merge(accelerate_environment(plan));
      p.spec.working_dir = inputs.working_dir;
      p.spec.stdout_path = inputs.log_dir / "accelerate.stdout";
      p.spec.stderr_path = inputs.log_dir / "accelerate.stderr";
      if (plan.world_size > 1) plan.torchrun_log_dir = inputs.log_dir / "torchrun";
      plan.processes.push_back(std::move(p));
      break;
    }
    case LauncherKind::kSlurm:
    case LauncherKind::kSlurmTorchrun: {
      PlannedProcess p;
      for (const RankAssignment& r : plan.ranks) p.ranks.push_back(r.rank);
      p.spec.rank = 0;
      std::vector<std::string> program = substituted(
          inputs.trainer_argv, {{"world_size", world},
                                {"log_file", (inputs.log_dir / rank_log_name("{rank}")).string()}});
      if (plan.launcher == LauncherKind::kSlurmTorchrun) {
        // {node_rank}, {master_addr} and {master_port} are filled in on each node by the
        // per-node wrapper.
        program = torchrun_agent_argv(plan, inputs, "{node_rank}", "{master_addr}:{master_port}",
                                      program);
      }
      p.spec.argv = srun_argv(plan, lc, inputs, explicit_master_addr, program);
      p.spec.env = common;
      p.spec.working_dir = inputs.working_dir;
      p.spec.stdout_path = inputs.log_dir / "srun.stdout";
      p.spec.stderr_path = inputs.log_dir / "srun.stderr";
      plan.processes.push_back(std::move(p));
      break;
    }
  }
  return plan;
}

}  // namespace bigmac::launch
