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

/// The open-file limit (RLIMIT_NOFILE): soft, what a process gets; hard, how far it may raise
/// it. std::nullopt for a value means unlimited.
struct FileLimit {
  std::optional<std::uint64_t> soft;
  std::optional<std::uint64_t> hard;
};

/// About how many descriptors the orchestrator holds while the gate runs: a base for its own
/// files, per started process its two output pipes, the two files they are copied to and a
/// pidfd, and per rank its log file followed (three per rank under torchrun: its workers'
/// stdout and stderr files too).
std::uint64_t descriptors_needed(const LaunchPlan& plan);

/// What preflight may look at besides the plan.
struct PreflightOptions {
  std::filesystem::path run_dir;  ///< holds the process record of earlier runs; empty: skip
  std::uintmax_t min_free_bytes = std::uintmax_t{256} << 20;  ///< for the logs of this gate
  std::optional<DeviceInventory> devices;  ///< nullopt: probed (only when the plan uses cuda)
  bool check_port = true;                  ///< the master port on this host (builtin/torchrun only)
  /// nullopt: this process's own limit, whose soft value preflight raises (up to the hard one)
  /// when the gate needs more; given (tests): judged as it is, nothing raised.
  std::optional<FileLimit> open_files;
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
/// earlier run of the run directory, free disk for logs, trainer and launcher executable, and
/// enough open files for its ranks (the soft limit raised when the hard one allows).
/// With srun: Slurm's commands and controller, nodes, CPUs and GPUs (slurm_preflight.h).
PreflightReport run_preflight(const LaunchPlan& plan, const PreflightOptions& options);

}  // namespace bigmac::launch
