#include "launch/slurm_preflight.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "launch/slurm_query.h"
#include "proc/command_output.h"
#include "proc/port_probe.h"
#include "proc/program_path.h"

namespace bigmac::launch {
namespace {

Error problem(std::string key, std::string message, std::string hint = {}) {
  Error e = make_error(ErrorKind::kInfrastructure, std::move(message), std::move(hint));
  e.key = std::move(key);
  return e;
}

std::string join_nodes(const std::vector<const SlurmNode*>& nodes, bool with_cpus) {
  std::string out;
  for (const SlurmNode* n : nodes) {
    if (!out.empty()) out += ", ";
    out += with_cpus ? fmt::format("{} ({} CPUs, {} GPUs, {})", n->name, n->cpus, n->gpus, n->state)
                     : fmt::format("{} ({})", n->name, n->state);
  }
  return out.empty() ? "none" : out;
}

/// Every node sinfo lists; nullopt when the controller did not answer (reported).
std::optional<std::vector<SlurmNode>> cluster_nodes(const LaunchPlan& plan, Errors& out) {
  auto run = proc::run_command({plan.slurm.sinfo, "-h", "-N", "-o", kSinfoNodeFormat},
                               std::chrono::seconds(30));
  if (!run || !run->ok()) {
    out.push_back(
        problem("launch.launcher",
                fmt::format("cannot reach the Slurm controller: `{} -N` {}", plan.slurm.sinfo,
                            !run             ? run.error().message
                            : run->timed_out ? std::string("did not answer within 30 s")
                                             : "failed: " + run->first_line()),
                "check that slurmctld runs and SLURM_CONF points at its slurm.conf"));
    return std::nullopt;
  }
  auto nodes = parse_sinfo_nodes(run->out);
  if (!nodes) {
    out.push_back(nodes.error());
    return std::nullopt;
  }
  return std::move(*nodes);
}

/// The nodes of the gate's partition (the default one when none is configured).
std::vector<SlurmNode> partition_nodes(const LaunchPlan& plan, const std::vector<SlurmNode>& all,
                                       Errors& out) {
  std::vector<SlurmNode> in_partition;
  std::vector<std::string> partitions;
  for (const SlurmNode& n : all) {
    if (std::find(partitions.begin(), partitions.end(), n.partition) == partitions.end()) {
      partitions.push_back(n.partition);
    }
    const bool wanted =
        plan.slurm.partition.empty() ? n.default_partition : n.partition == plan.slurm.partition;
    if (wanted) in_partition.push_back(n);
  }
  if (in_partition.empty()) {
    std::string known;
    for (const std::string& p : partitions) known += (known.empty() ? "" : ", ") + p;
    out.push_back(problem(
        "launch.slurm.partition",
        plan.slurm.partition.empty()
            ? "the cluster has no default partition"
            : fmt::format("partition '{}' does not exist", plan.slurm.partition),
        fmt::format("set launch.slurm.partition to one of: {}", known.empty() ? "(none)" : known)));
  }
  return in_partition;
}

void check_capacity(const LaunchPlan& plan, const std::vector<SlurmNode>& nodes, Errors& out) {
  const std::string where = plan.slurm.partition.empty()
                                ? fmt::format("the default partition ({})", nodes.front().partition)
                                : fmt::format("partition {}", plan.slurm.partition);
  std::vector<const SlurmNode*> usable, unusable, big_enough;
  for (const SlurmNode& n : nodes) {
    (n.usable() ? usable : unusable).push_back(&n);
    if (n.usable() && n.cpus >= plan.slurm.cpus_per_node && n.gpus >= plan.slurm.gpus_per_node) {
      big_enough.push_back(&n);
    }
  }
  if (static_cast<int>(usable.size()) < plan.nnodes) {
    out.push_back(problem(
        "launch.nnodes",
        fmt::format("the gate needs {} nodes, but {} has {} usable ({} down, drained or not "
                    "responding: {})",
                    plan.nnodes, where, usable.size(), unusable.size(),
                    join_nodes(unusable, false)),
        "resume the nodes (scontrol update nodename=... state=resume), pick another "
        "launch.slurm.partition, or lower launch.nnodes"));
  } else if (static_cast<int>(big_enough.size()) < plan.nnodes) {
    out.push_back(problem(
        "launch.nproc_per_node",
        fmt::format(
            "the gate needs {} nodes with {} CPUs ({} ranks x {} threads) and {} GPUs "
            "each, but {} has {}: {}",
            plan.nnodes, plan.slurm.cpus_per_node, plan.nproc_per_node,
            plan.nnodes > 0 ? plan.slurm.cpus_per_node / std::max(1, plan.nproc_per_node) : 0,
            plan.slurm.gpus_per_node, where, big_enough.size(), join_nodes(usable, true)),
        "lower launch.nproc_per_node or launch.threads_per_rank, or pick another partition"));
  }
}

void check_allocation(const LaunchPlan& plan, const SlurmAllocation& a, Errors& out) {
  if (static_cast<int>(a.nodes.size()) < plan.nnodes) {
    out.push_back(problem(
        "launch.nnodes",
        fmt::format("the gate needs {} nodes, but allocation {} has {}", plan.nnodes, a.job_id,
                    a.nodes.size()),
        fmt::format("ask sbatch/salloc for --nodes={} or lower launch.nnodes", plan.nnodes)));
  }
  for (std::size_t i = 0; i < a.cpus_per_node.size() && i < a.nodes.size(); ++i) {
    if (static_cast<int>(i) < plan.nnodes && a.cpus_per_node[i] < plan.slurm.cpus_per_node) {
      out.push_back(
          problem("launch.nproc_per_node",
                  fmt::format("node {} of allocation {} has {} CPUs, the gate needs {} per node",
                              a.nodes[i], a.job_id, a.cpus_per_node[i], plan.slurm.cpus_per_node),
                  "ask for more CPUs per node (--cpus-per-task, --ntasks-per-node) or lower "
                  "launch.threads_per_rank"));
      break;
    }
  }
}

/// The port on the node that will host rank 0, when that node is this host: every node srun
/// might pick first (`candidates`) must be this host, by its NodeAddr (one scontrol call).
void check_master_port(const LaunchPlan& plan, const std::vector<std::string>& candidates,
                       Errors& out, std::vector<std::string>& notes) {
  std::map<std::string, std::string> addrs;
  if (!candidates.empty()) {
    auto shown =
        proc::run_command({plan.slurm.scontrol, "show", "node", "-o"}, std::chrono::seconds(30));
    if (shown && shown->ok()) addrs = parse_node_addrs(shown->out);
  }
  for (const std::string& node : candidates) {
    auto named = addrs.find(node);
    const std::string addr = named != addrs.end() ? named->second : node;
    const std::optional<std::string> resolved = resolve_host(addr);
    if (!resolved || !is_local_address(*resolved)) {
      notes.push_back(fmt::format("master port {} not checked: node {} ({}) is not this host",
                                  plan.master_port, node, resolved.value_or(addr)));
      return;
    }
  }
  proc::PortProbe probe = proc::probe_port(plan.master_port);
  if (probe.free) return;
  std::string who;
  for (const proc::PortHolder& h : probe.holders) {
    who += fmt::format("{}pid {} ({})", who.empty() ? "" : ", ", h.pid, h.command_line);
  }
  out.push_back(problem(
      "launch.master_port",
      fmt::format("master port {} is in use on the first node ({}), held by {}", plan.master_port,
                  probe.bind_error, who.empty() ? "a process this user cannot see" : who),
      "stop that process or pick another launch.master_port"));
}

}  // namespace

void check_slurm(const LaunchPlan& plan, Errors& out, std::vector<std::string>& notes) {
  bool have_sinfo = true;
  for (const std::string& program : {plan.slurm.sinfo, plan.slurm.scontrol, plan.slurm.scancel}) {
    if (auto found = proc::find_program(program); !found) {
      Error e = found.error();
      e.key = "launch.launcher";
      e.hint = "install Slurm's client commands (Debian: slurm-client) or fix PATH";
      out.push_back(std::move(e));
      if (program == plan.slurm.sinfo) have_sinfo = false;
    }
  }
  if (!have_sinfo) return;
  const EnvLookup getenv = [](const char* name) { return std::getenv(name); };
  std::vector<std::string> first_candidates;
  if (plan.slurm.inside_allocation) {
    auto allocation = read_allocation(getenv);
    if (!allocation) {
      out.push_back(allocation.error());
    } else if (*allocation) {
      check_allocation(plan, **allocation, out);
      if (!(*allocation)->nodes.empty()) first_candidates.push_back((*allocation)->nodes.front());
    }
  }
  auto nodes = cluster_nodes(plan, out);
  if (!nodes) return;  // the controller did not answer: nothing more can be asked
  if (!plan.slurm.inside_allocation) {
    const std::vector<SlurmNode> partition = partition_nodes(plan, *nodes, out);
    if (partition.empty()) return;
    check_capacity(plan, partition, out);
    for (const SlurmNode& n : partition) {
      if (n.usable()) first_candidates.push_back(n.name);
    }
  }
  if (plan.slurm.explicit_master_addr) {
    // An explicit launch.master_addr: that address hosts the store.
    if (is_local_address(resolve_host(plan.master_addr).value_or(""))) {
      check_master_port(plan, {}, out, notes);
    } else {
      notes.push_back(fmt::format("master port {} not checked: {} is not this host",
                                  plan.master_port, plan.master_addr));
    }
    return;
  }
  if (!first_candidates.empty()) check_master_port(plan, first_candidates, out, notes);
}

}  // namespace bigmac::launch
