#include "launch/launch_plan.h"

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/json_file.h"

namespace bigmac::launch {

std::string_view launcher_name(LauncherKind kind) {
  switch (kind) {
    case LauncherKind::kBuiltin:
      return "builtin";
    case LauncherKind::kTorchrun:
      return "torchrun";
    case LauncherKind::kSlurm:
      return "slurm";
    case LauncherKind::kSlurmTorchrun:
      return "slurm+torchrun";
    case LauncherKind::kAccelerate:
      return "accelerate";
  }
  return "?";
}

std::string quote_for_display(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-./=:,+@%{}[]") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += quote_for_display(a);
  }
  return out;
}

namespace {

std::string join_env(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const auto& [name, value] : env) {
    if (!out.empty()) out += ' ';
    out += name + "=" + quote_for_display(value);
  }
  return out;
}

}  // namespace

std::string render_text(const LaunchPlan& plan) {
  std::string out = fmt::format(
      "launcher {}: world_size {} = {} node(s) x {} process(es), master {}:{}, devices {}\n",
      launcher_name(plan.launcher), plan.world_size, plan.nnodes, plan.nproc_per_node,
      plan.master_addr,
      plan.master_port == 0 ? std::string("<a free port, picked as the gate starts>")
                            : std::to_string(plan.master_port),
      plan.devices);
  out += fmt::format("logs in {}\n", plan.log_dir.string());
  if (uses_slurm(plan.launcher)) {
    out +=
        plan.slurm.inside_allocation
            ? fmt::format("slurm: a step of allocation {} (SLURM_JOB_ID)\n", plan.slurm.job_id)
            : fmt::format("slurm: srun allocates job '{}' in partition {}\n", plan.slurm.job_name,
                          plan.slurm.partition.empty() ? "(default)" : plan.slurm.partition);
  }
  for (const RankAssignment& r : plan.ranks) {
    out += fmt::format("rank {} (node {}, local rank {}, {}): log {}{}\n", r.rank, r.node_rank,
                       r.local_rank, r.device, r.log_path.string(),
                       r.probe_path.empty() ? "" : ", probe " + r.probe_path.string());
  }
  for (const PlannedProcess& p : plan.processes) {
    std::string ranks;
    for (int r : p.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    out += fmt::format("process for rank(s) {}:\n", ranks);
    out += fmt::format("  argv   {}\n", join_argv(p.spec.argv));
    out += fmt::format("  env    {}\n", join_env(p.spec.env));
    if (!p.spec.working_dir.empty())
      out += fmt::format("  cwd    {}\n", p.spec.working_dir.string());
    out += fmt::format("  stdout {}\n  stderr {}\n", p.spec.stdout_path.string(),
                       p.spec.stderr_path.string());
  }
  return out;
}

nlohmann::json to_json(const LaunchPlan& plan) {
  nlohmann::json j;
  j["launcher"] = launcher_name(plan.launcher);
  j["master_addr"] = plan.master_addr;
  j["master_port"] = plan.master_port;
  j["nnodes"] = plan.nnodes;
  j["nproc_per_node"] = plan.nproc_per_node;
  j["world_size"] = plan.world_size;
  j["devices"] = plan.devices;
  j["trainer_program"] = plan.trainer_program;
  if (!plan.rank_env_program.empty()) j["rank_env_program"] = plan.rank_env_program;
  j["log_dir"] = plan.log_dir.string();
  if (!plan.torchrun_log_dir.empty()) j["torchrun_log_dir"] = plan.torchrun_log_dir.string();
  j["ranks"] = nlohmann::json::array();
  for (const RankAssignment& r : plan.ranks) {
    j["ranks"].push_back({{"rank", r.rank},
                          {"local_rank", r.local_rank},
                          {"node_rank", r.node_rank},
                          {"device", r.device},
                          {"env", r.env},
                          {"log_path", r.log_path.string()},
                          {"stdout_path", r.stdout_path.string()},
                          {"stderr_path", r.stderr_path.string()},
                          {"probe_path", r.probe_path.string()}});
  }
  if (uses_slurm(plan.launcher)) {
    j["slurm"] = {{"inside_allocation", plan.slurm.inside_allocation},
                  {"job_id", plan.slurm.job_id},
                  {"job_name", plan.slurm.job_name},
                  {"partition", plan.slurm.partition},
                  {"cpus_per_node", plan.slurm.cpus_per_node},
                  {"gpus_per_node", plan.slurm.gpus_per_node}};
  }
  j["processes"] = nlohmann::json::array();
  for (const PlannedProcess& p : plan.processes) {
    j["processes"].push_back({{"ranks", p.ranks},
                              {"argv", p.spec.argv},
                              {"env", p.spec.env},
                              {"working_dir", p.spec.working_dir.string()},
                              {"stdout", p.spec.stdout_path.string()},
                              {"stderr", p.spec.stderr_path.string()}});
  }
  return j;
}

Expected<void> write_plan(const LaunchPlan& plan, const std::filesystem::path& path) {
  return write_file_atomically(path, json_text(to_json(plan), 2) + "\n");
}

}  // namespace bigmac::launch
