#pragma once

// What the orchestrator knows and does about the job step srun runs for a gate.

#include <map>
#include <optional>
#include <vector>

#include "launch/error_line.h"
#include "launch/launch_plan.h"
#include "launch/rank_placement.h"
#include "launch/run_result.h"
#include "launch/srun_report.h"

namespace bigmac::launch {

/// The ranks behind srun task `task`: the task itself under slurm; under slurm+torchrun the
/// ranks its node's agent started (their placements), else the ones it would start in order.
std::vector<int> ranks_of_task(int task, const LaunchPlan& plan,
                               const std::map<int, RankPlacement>& placements);

/// srun exits with the worst code of its tasks; what srun said says which rank on which node
/// failed first, or which node went down. Rewrites `failure` (of the srun process) to that.
void attribute_srun_failure(const SrunReport& report, const LaunchPlan& plan,
                            const std::map<int, RankPlacement>& placements,
                            const std::map<int, ErrorLine>& errors, ProcessFailure& failure);

/// One rank's exit as srun reported it, its node, and whether srun stopped it because another
/// rank failed or its node went down (then `stopped_by_us`: a consequence, not a cause).
void apply_srun_report(const SrunReport& report, const LaunchPlan& plan,
                       const std::map<int, RankPlacement>& placements,
                       const std::optional<ProcessFailure>& root, RankOutcome& outcome);

/// Cancels what srun started, after the teardown stopped srun (Slurm's bookkeeping can lag):
/// the job by its name outside an allocation, the job step (from the ranks' placements) inside
/// one. Nothing to cancel is not an error; an scancel that fails or does not answer is: its
/// words, to report (the job may still hold its nodes), or empty.
std::string cancel_slurm_job(const LaunchPlan& plan,
                             const std::map<int, RankPlacement>& placements);

}  // namespace bigmac::launch
