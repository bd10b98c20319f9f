#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/rank_placement.h"
#include "launch/slurm_query.h"

namespace bigmac::launch {

/// Where the task that bigmac-rank-env wraps gets its identity from.
enum class TaskSource {
  kSlurm,      ///< an srun task that is one rank: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID...
  kSlurmNode,  ///< an srun task per node that starts a torchrun agent (slurm+torchrun)
  kTorchrun,   ///< a torchrun worker: RANK, LOCAL_RANK, GROUP_RANK already set by its agent
};

/// bigmac-rank-env's command line:
///   bigmac-rank-env --from slurm|slurm-node|torchrun [--master-addr A] [--master-port P]
///                   [--output DIR] [--scontrol PROGRAM] -- PROGRAM ARGS...
struct TaskRequest {
  TaskSource from = TaskSource::kSlurm;
  std::string master_addr;  ///< empty: the first node of the job step, resolved
  std::optional<int> master_port;
  std::filesystem::path output_dir;  ///< torchrun: rank<R>.stdout/.stderr go here
  std::string scontrol = "scontrol";
  std::vector<std::string> argv;  ///< the program to exec, with {placeholders}
};

/// Parses the wrapper's arguments (argv[0] excluded). Errors say what was expected.
Expected<TaskRequest> parse_task_request(const std::vector<std::string>& args);

/// What the wrapper does before it execs: the environment it adds, the argv with
/// {rank} {local_rank} {node_rank} {nnodes} {master_addr} {master_port} filled in, where the
/// program's output goes, and where the rank runs (printed on its stderr).
struct TaskExec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::filesystem::path stdout_path;       ///< empty: inherited
  std::filesystem::path stderr_path;       ///< empty: inherited
  std::optional<RankPlacement> placement;  ///< none for a per-node agent task
};

/// Finds the address of a node (node_address in the wrapper, a table in tests).
using AddressResolver = std::function<Expected<std::string>(const std::string& node)>;

/// Translates the launcher's environment into torchrun's: RANK, LOCAL_RANK, WORLD_SIZE,
/// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR
/// (the first node of the step, resolved), MASTER_PORT. `host` is this machine's name (when
/// SLURMD_NODENAME is unset), `parent` the wrapper's parent pid. Errors name the variable.
Expected<TaskExec> plan_task_exec(const TaskRequest& request, const EnvLookup& getenv,
                                  const AddressResolver& resolve, const std::string& host,
                                  pid_t parent);

}  // namespace bigmac::launch
