#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/device_inventory.h"
#include "launch/launch_plan.h"

namespace bigmac::launch {

/// What preflight may look at besides the plan.
struct PreflightOptions {
  std::filesystem::path run_dir;  ///< holds the process record of earlier runs; empty: skip
  std::uintmax_t min_free_bytes = std::uintmax_t{256} << 20;  ///< for the logs of this gate
  std::optional<DeviceInventory> devices;  ///< nullopt: probed (only when the plan uses cuda)
  bool check_port = true;                  ///< the master port on this host (builtin/torchrun only)
};

/// Every problem found before anything starts, all at once, each with its numbers.
struct PreflightReport {
  Errors problems;
  std::vector<std::string> passed;  ///< names of the checks that ran and passed
  std::vector<std::string> notes;   ///< what could not be checked, and why

  bool ok() const { return problems.empty(); }
  /// One line per problem ("preflight: ..."), or "preflight: N checks passed".
  std::string render() const;
};

/// Checks the plan against this host: master port free (and who holds it), master address
/// resolvable, ranks per node <= visible GPUs and one distinct device per local rank (cuda
/// only), identical MASTER_ADDR/MASTER_PORT/WORLD_SIZE and distinct RANKs, no leftovers of an
/// earlier run of the run directory, free disk for logs, trainer and launcher executable.
/// With srun: Slurm's commands and controller, nodes, CPUs and GPUs (slurm_preflight.h).
PreflightReport run_preflight(const LaunchPlan& plan, const PreflightOptions& options);

}  // namespace bigmac::launch
