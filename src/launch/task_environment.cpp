#include "launch/task_environment.h"

#include <fmt/format.h>

#include <charconv>

#include "launch/launch_planner.h"
#include "launch/slurm_hostlist.h"

namespace bigmac::launch {
namespace {

Error usage(std::string message) {
  return make_error(ErrorKind::kUsage, std::move(message),
                    "usage: bigmac-rank-env --from slurm|slurm-node|torchrun [--master-addr A] "
                    "[--master-port P] [--output DIR] [--scontrol PROGRAM] -- PROGRAM ARGS...");
}

Error variable_error(std::string_view name, std::string message) {
  Error e = make_error(ErrorKind::kInfrastructure, std::move(message),
                       "run it as an srun task (or a torchrun worker), as the plan does");
  e.key = std::string(name);
  return e;
}

std::optional<int> to_int(std::string_view s) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || value < 0) return {};
  return value;
}

/// Reads variables into a small record, collecting the first error.
class Variables {
 public:
  explicit Variables(const EnvLookup& getenv) : getenv_(getenv) {}

  /// The first of `names` that is set, as a non-negative integer.
  int number(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      const char* text = getenv_(name);
      if (text == nullptr) continue;
      if (auto v = to_int(text)) return *v;
      fail(name, fmt::format("${}=\"{}\" is not a non-negative integer", name, text));
      return 0;
    }
    fail(*names.begin(), fmt::format("${} is not set", *names.begin()));
    return 0;
  }
  /// The first of `names` that is set, or empty.
  std::string text(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (const char* t = getenv_(name); t != nullptr) return t;
    }
    return {};
  }
  void fail(std::string_view name, std::string message) {
    if (!error_) error_ = variable_error(name, std::move(message));
  }
  const std::optional<Error>& error() const { return error_; }

 private:
  const EnvLookup& getenv_;
  std::optional<Error> error_;
};

Expected<std::string> master_address(const TaskRequest& request, Variables& vars,
                                     const AddressResolver& resolve) {
  if (!request.master_addr.empty()) return request.master_addr;
  const std::string nodes = vars.text({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  const std::string first = first_host(nodes);
  if (first.empty()) {
    return tl::unexpected(variable_error("SLURM_STEP_NODELIST",
                                         "neither $SLURM_STEP_NODELIST nor "
                                         "$SLURM_JOB_NODELIST names a node"));
  }
  return resolve(first);
}

Expected<int> master_port(const TaskRequest& request, const EnvLookup& getenv) {
  if (request.master_port) return *request.master_port;
  if (const char* text = getenv("MASTER_PORT"); text != nullptr) {
    if (auto v = to_int(text); v && *v <= 65535) return *v;
    return tl::unexpected(variable_error("MASTER_PORT", fmt::format("$MASTER_PORT=\"{}\" is "
                                                                    "not a port number",
                                                                    text)));
  }
  return tl::unexpected(usage("no --master-port and $MASTER_PORT is not set"));
}

std::string job_step(const Variables& vars) {
  const std::string job = vars.text({"SLURM_JOB_ID"});
  const std::string step = vars.text({"SLURM_STEP_ID"});
  if (job.empty()) return {};
  return step.empty() ? job : job + "." + step;
}

/// Where the rank runs: its node is SLURMD_NODENAME under Slurm, else this host.
RankPlacement placement_of(const Variables& vars, int rank, int local, int node,
                           const std::string& host, pid_t parent) {
  RankPlacement p;
  p.rank = rank;
  p.local_rank = local;
  p.node_rank = node;
  p.node = vars.text({"SLURMD_NODENAME"});
  if (p.node.empty()) p.node = host;
  p.job_step = job_step(vars);
  p.parent = parent;
  return p;
}

std::vector<std::string> filled(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& a : argv) out.push_back(substitute(a, values));
  return out;
}

Expected<TaskExec> slurm_rank(const TaskRequest& request, const EnvLookup& getenv,
                              const AddressResolver& resolve, const std::string& host,
                              pid_t parent) {
  Variables vars(getenv);
  const int rank = vars.number({"SLURM_PROCID"});
  const int world = vars.number({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  const int local = vars.number({"SLURM_LOCALID"});
  const int node = vars.number({"SLURM_NODEID"});
  const int nodes = vars.number({"SLURM_STEP_NUM_NODES", "SLURM_NNODES"});
  if (vars.error()) return tl::unexpected(*vars.error());
  // Tasks on this node: the step's layout ("2(x2)"), entry SLURM_NODEID.
  const std::string layout = vars.text({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  auto counts = expand_node_counts(layout);
  if (!counts || node >= static_cast<int>(counts->size())) {
    return tl::unexpected(variable_error(
        "SLURM_STEP_TASKS_PER_NODE",
        fmt::format("$SLURM_STEP_TASKS_PER_NODE=\"{}\" has no entry for node {}", layout, node)));
  }
  auto addr = master_address(request, vars, resolve);
  if (!addr) return tl::unexpected(addr.error());
  auto port = master_port(request, getenv);
  if (!port) return tl::unexpected(port.error());

  TaskExec exec;
  exec.env = {{"RANK", std::to_string(rank)},
              {"LOCAL_RANK", std::to_string(local)},
              {"WORLD_SIZE", std::to_string(world)},
              {"LOCAL_WORLD_SIZE", std::to_string((*counts)[static_cast<std::size_t>(node)])},
              {"GROUP_RANK", std::to_string(node)},
              {"GROUP_WORLD_SIZE", std::to_string(nodes)},
              {"ROLE_RANK", std::to_string(rank)},
              {"ROLE_WORLD_SIZE", std::to_string(world)},
              {"MASTER_ADDR", *addr},
              {"MASTER_PORT", std::to_string(*port)}};
  exec.argv = filled(request.argv, {{"rank", std::to_string(rank)},
                                    {"local_rank", std::to_string(local)},
                                    {"node_rank", std::to_string(node)},
                                    {"nnodes", std::to_string(nodes)},
                                    {"master_addr", *addr},
                                    {"master_port", std::to_string(*port)}});
  exec.placement = placement_of(vars, rank, local, node, host, parent);
  return exec;
}

Expected<TaskExec> slurm_node(const TaskRequest& request, const EnvLookup& getenv,
                              const AddressResolver& resolve) {
  Variables vars(getenv);
  const int node = vars.number({"SLURM_NODEID"});
  const int nodes = vars.number({"SLURM_STEP_NUM_NODES", "SLURM_NNODES"});
  if (vars.error()) return tl::unexpected(*vars.error());
  auto addr = master_address(request, vars, resolve);
  if (!addr) return tl::unexpected(addr.error());
  auto port = master_port(request, getenv);
  if (!port) return tl::unexpected(port.error());
  TaskExec exec;
  exec.env = {{"MASTER_ADDR", *addr},
              {"MASTER_PORT", std::to_string(*port)},
              {"NODE_RANK", std::to_string(node)}};
  exec.argv = filled(request.argv, {{"node_rank", std::to_string(node)},
                                    {"nnodes", std::to_string(nodes)},
                                    {"master_addr", *addr},
                                    {"master_port", std::to_string(*port)}});
  return exec;
}

Expected<TaskExec> torchrun_worker(const TaskRequest& request, const EnvLookup& getenv,
                                   const std::string& host, pid_t parent) {
  Variables vars(getenv);
  const int rank = vars.number({"RANK"});
  const int local = vars.number({"LOCAL_RANK"});
  const int group = vars.number({"GROUP_RANK"});
  if (vars.error()) return tl::unexpected(*vars.error());
  TaskExec exec;
  exec.argv =
      filled(request.argv, {{"rank", std::to_string(rank)}, {"local_rank", std::to_string(local)}});
  if (!request.output_dir.empty()) {
    exec.stdout_path = request.output_dir / fmt::format("rank{}.stdout", rank);
    exec.stderr_path = request.output_dir / fmt::format("rank{}.stderr", rank);
  }
  exec.placement = placement_of(vars, rank, local, group, host, parent);
  return exec;
}

}  // namespace

Expected<TaskRequest> parse_task_request(const std::vector<std::string>& args) {
  TaskRequest request;
  bool have_from = false;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size() || args[i + 1] == "--") {
      return tl::unexpected(usage(fmt::format("{} needs a value", flag)));
    }
    const std::string& value = args[++i];
    if (flag == "--from") {
      have_from = true;
      if (value == "slurm") {
        request.from = TaskSource::kSlurm;
      } else if (value == "slurm-node") {
        request.from = TaskSource::kSlurmNode;
      } else if (value == "torchrun") {
        request.from = TaskSource::kTorchrun;
      } else {
        return tl::unexpected(
            usage(fmt::format("--from {}: expected slurm, slurm-node or torchrun", value)));
      }
    } else if (flag == "--master-addr") {
      request.master_addr = value;
    } else if (flag == "--master-port") {
      auto port = to_int(value);
      if (!port || *port < 1 || *port > 65535) {
        return tl::unexpected(usage(fmt::format("--master-port {}: not a port number", value)));
      }
      request.master_port = *port;
    } else if (flag == "--output") {
      request.output_dir = value;
    } else if (flag == "--scontrol") {
      request.scontrol = value;
    } else {
      return tl::unexpected(usage(fmt::format("unknown option '{}'", flag)));
    }
  }
  if (!have_from) return tl::unexpected(usage("--from is required"));
  if (i + 1 >= args.size()) return tl::unexpected(usage("no program after --"));
  request.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  return request;
}

Expected<TaskExec> plan_task_exec(const TaskRequest& request, const EnvLookup& getenv,
                                  const AddressResolver& resolve, const std::string& host,
                                  pid_t parent) {
  switch (request.from) {
    case TaskSource::kSlurm:
      return slurm_rank(request, getenv, resolve, host, parent);
    case TaskSource::kSlurmNode:
      return slurm_node(request, getenv, resolve);
    case TaskSource::kTorchrun:
      return torchrun_worker(request, getenv, host, parent);
  }
  return tl::unexpected(usage("unknown task source"));
}

}  // namespace bigmac::launch
