#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "launch/launch_plan.h"

namespace bigmac::launch {

/// Preflight of a plan whose ranks srun starts, every problem at once: srun, sinfo, scontrol
/// and scancel installed; the controller answering; enough usable nodes (not down or drained)
/// with enough CPUs and GPUs per node in the partition, or in the allocation when inside one;
/// the master port free on the first node when that node is this host. `notes` gets what
/// could not be checked and why.
void check_slurm(const LaunchPlan& plan, Errors& out, std::vector<std::string>& notes);

}  // namespace bigmac::launch
