#include "launch/launch_planner.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "core/edit_distance.h"

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
  static constexpr std::array<std::string_view, 3> kNames = {"builtin", "torchrun", "slurm"};
  auto near = closest_match(name, kNames);
  return tl::unexpected(
      config_error("launch.launcher",
                   fmt::format("unknown launcher '{}'; expected builtin, torchrun or slurm", name),
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

bool is_python_script(const std::string& program) {
  return program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
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

Expected<LaunchPlan> plan_launch(const config::Config& config, const PlanInputs& inputs) {
  const config::LaunchConfig& lc = config.launch;
  auto launcher = parse_launcher(lc.launcher);
  if (!launcher) return tl::unexpected(launcher.error());
  if (inputs.trainer_argv.empty()) {
    return tl::unexpected(config_error("trainer.command", "the trainer argv is empty"));
  }
  if (lc.nnodes < 1 || lc.nproc_per_node < 1) {
    return tl::unexpected(
        config_error("launch.nproc_per_node",
                     fmt::format("nnodes = {} and nproc_per_node = {} must both be at least 1",
                                 lc.nnodes, lc.nproc_per_node)));
  }
  if (*launcher != LauncherKind::kSlurm && lc.nnodes != 1) {
    return tl::unexpected(
        config_error("launch.nnodes",
                     fmt::format("launcher {} starts ranks on this host only, but nnodes = {}",
                                 lc.launcher, lc.nnodes),
                     "use launcher = \"slurm\" for several nodes, or set nnodes = 1"));
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
  if (lc.devices == "auto") {
    plan.devices = inputs.visible_devices.empty() ? "cpu" : "cuda";
  } else if (lc.devices == "cpu" || lc.devices == "cuda") {
    plan.devices = lc.devices;
  } else {
    return tl::unexpected(
        config_error("launch.devices",
                     fmt::format("unknown devices '{}'; expected cpu, cuda or auto", lc.devices)));
  }
  const bool cuda = plan.devices == "cuda";
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
      PlannedProcess p;
      for (const RankAssignment& r : plan.ranks) p.ranks.push_back(r.rank);
      p.spec.rank = 0;
      // No restarts: a failure is evidence for the gate, not something to retry. A 1 s monitor
      // interval (default 5 s) lets a worker's exit reach us quickly.
      // --tee 1 copies each worker's stdout to its file and to our pipe with a [default<i>]:
      // prefix, which the log parser uses to attribute lines to ranks. torch 1.13 on Python 3.11
      // cannot parse the values 0 and 3 (its Std IntFlag iteration skips NONE and ALL), and 0 is
      // the default of --redirects, so stderr is redirected (2) to the per-rank files explicitly.
      p.spec.argv = {inputs.torchrun_program,
                     "--nnodes",
                     "1",
                     "--nproc_per_node",
                     std::to_string(plan.nproc_per_node),
                     "--node_rank",
                     "0",
                     "--master_addr",
                     plan.master_addr,
                     "--master_port",
                     std::to_string(plan.master_port),
                     "--max_restarts",
                     "0",
                     "--monitor_interval",
                     "1",
                     "--redirects",
                     "2",
                     "--tee",
                     "1",
                     "--log_dir",
                     (inputs.log_dir / "torchrun").string()};
      if (!is_python_script(plan.trainer_program)) p.spec.argv.push_back("--no_python");
      for (std::string& a :
           substituted(inputs.trainer_argv,
                       {{"world_size", world},
                        {"log_file", (inputs.log_dir / rank_log_name("{rank}")).string()}})) {
        p.spec.argv.push_back(std::move(a));
      }
      p.spec.env = common;
      p.spec.working_dir = inputs.working_dir;
      p.spec.stdout_path = inputs.log_dir / "torchrun.stdout";
      p.spec.stderr_path = inputs.log_dir / "torchrun.stderr";
      plan.processes.push_back(std::move(p));
      break;
    }
    case LauncherKind::kSlurm: {
      PlannedProcess p;
      for (const RankAssignment& r : plan.ranks) p.ranks.push_back(r.rank);
      p.spec.rank = 0;
      // --label prefixes every line with "<rank>: "; --kill-on-bad-exit ends the job step when
      // one task fails, as the builtin launcher does. RANK/LOCAL_RANK come from SLURM_PROCID and
      // SLURM_LOCALID inside the allocation.
      p.spec.argv = {inputs.srun_program,
                     fmt::format("--nodes={}", plan.nnodes),
                     fmt::format("--ntasks={}", plan.world_size),
                     fmt::format("--ntasks-per-node={}", plan.nproc_per_node),
                     fmt::format("--cpus-per-task={}", lc.threads_per_rank),
                     "--kill-on-bad-exit=1",
                     "--label",
                     "--unbuffered",
                     "--export=ALL"};
      if (cuda) p.spec.argv.push_back("--gpus-per-task=1");
      for (std::string& a :
           substituted(inputs.trainer_argv,
                       {{"world_size", world},
                        {"log_file", (inputs.log_dir / rank_log_name("{rank}")).string()}})) {
        p.spec.argv.push_back(std::move(a));
      }
      p.spec.env = common;
      p.spec.env["MASTER_ADDR"] = plan.master_addr;
      p.spec.env["MASTER_PORT"] = std::to_string(plan.master_port);
      p.spec.env["WORLD_SIZE"] = world;
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
