#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace bigmac::launch {

/// Where one rank runs, as bigmac-rank-env saw it just before it exec'd the trainer. The
/// wrapper prints it as one line on the rank's stderr; the orchestrator reads it back to say
/// which node a rank ran on and which Slurm job step to cancel.
struct RankPlacement {
  int rank = -1;
  int local_rank = -1;
  int node_rank = -1;    ///< SLURM_NODEID, or torchrun's GROUP_RANK
  std::string node;      ///< SLURMD_NODENAME, else this host's name
  std::string job_step;  ///< "<SLURM_JOB_ID>.<SLURM_STEP_ID>" under Slurm, else empty
  pid_t parent = 0;      ///< the process that started the rank (a torchrun agent)

  bool operator==(const RankPlacement&) const = default;
};

/// The marker that starts a placement line.
inline constexpr std::string_view kPlacementMarker = "bigmac-rank-env: placement ";

/// "bigmac-rank-env: placement rank=2 local_rank=0 node_rank=1 node=n2 job_step=7.0 parent=41"
std::string placement_line(const RankPlacement& placement);

/// The placement in a line written by placement_line (launcher prefixes already stripped);
/// nullopt for any other line.
std::optional<RankPlacement> parse_placement_line(std::string_view line);

}  // namespace bigmac::launch
