#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace bigmac::launch {

/// Reads one environment variable (std::getenv, or a map in tests).
using EnvLookup = std::function<const char*(const char*)>;

/// The Slurm allocation this process runs in (sbatch or salloc), from its environment.
struct SlurmAllocation {
  std::string job_id;              ///< SLURM_JOB_ID
  std::vector<std::string> nodes;  ///< SLURM_JOB_NODELIST, expanded
  std::vector<int> cpus_per_node;  ///< SLURM_JOB_CPUS_PER_NODE, expanded (may be empty)
};

/// The allocation named by SLURM_JOB_ID, nullopt outside one. The error names the variable
/// that is malformed.
Expected<std::optional<SlurmAllocation>> read_allocation(const EnvLookup& getenv);

/// One node of a partition as `sinfo -N` lists it.
struct SlurmNode {
  std::string name;
  std::string partition;  ///< without the default marker '*'
  bool default_partition = false;
  std::string state;  ///< "idle", "mixed", "down*", "drained"...
  int cpus = 0;
  int gpus = 0;  ///< from GRES gpu[:type]:N

  /// Whether jobs can run there now or later (not down, drained, failing or unknown).
  bool usable() const;
};

/// The sinfo format string whose output parse_sinfo_nodes reads.
inline constexpr const char* kSinfoNodeFormat = "%N|%P|%t|%c|%G";

/// Parses `sinfo -h -N -o "%N|%P|%t|%c|%G"`; lines that do not fit are errors naming them.
Expected<std::vector<SlurmNode>> parse_sinfo_nodes(std::string_view text);

/// GPUs in a GRES string: "gpu:4", "gpu:a100:4(S:0-1)", "gpu:2,shard:8" -> 4, 4, 2; "(null)" 0.
int gpus_in_gres(std::string_view gres);

/// NodeAddr in `scontrol show node -o NAME` output; empty when missing.
std::string parse_node_addr(std::string_view scontrol_output);

/// NodeName -> NodeAddr for every node in `scontrol show node -o` output (one line per node).
std::map<std::string, std::string> parse_node_addrs(std::string_view scontrol_output);

/// The numeric address of `host` (getaddrinfo), nullopt when it does not resolve.
std::optional<std::string> resolve_host(const std::string& host);

/// The address ranks reach `node` at: the node name when it resolves, else its NodeAddr from
/// `scontrol show node` (nodes of a test cluster share 127.0.0.1 under their own names). The
/// error says what was tried.
Expected<std::string> node_address(const std::string& node, const std::string& scontrol);

/// Whether `address` belongs to this host (a socket can be bound to it).
bool is_local_address(const std::string& address);

}  // namespace bigmac::launch
