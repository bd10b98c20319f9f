#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace bigmac::launch {

/// The values an external trainer's argv template and environment receive for one gate:
/// `{gate}`, `{gate_config}`, `{pp}`, `{tp}`, `{dp}`, `{micro_batch_size}`, `{grad_accum}`,
/// `{micro_batches}`, `{schedule}`, `{seq_length}`, `{seed}`, `{max_steps}`, `{lr}`,
/// `{num_layers}`, `{split_points}`, `{trace_shapes}`, `{run_dir}`, `{attempt_dir}` (the gate
/// attempt's folder), `{nproc_per_node}`, `{nnodes}` (the gate's layout). `{log_file}`, `{rank}`,
/// `{local_rank}` and `{world_size}` are the launcher's, filled per rank.
std::map<std::string, std::string> gate_placeholders(const config::Config& gate_config,
                                                     const std::string& gate,
                                                     const std::filesystem::path& gate_file,
                                                     const std::filesystem::path& run_dir);

/// Whether the trainer is handed the value of `placeholder` ("grad_accum"): bigmac-train reads
/// every value from its gate file; a command only what its argv or its [trainer.env] values
/// name, or all of them when it takes `{gate_config}`.
bool trainer_receives(const config::Config& config, std::string_view placeholder);

/// Every `{placeholder}` an external trainer's command may hold: gate_placeholders' names and
/// the launcher's per-rank ones. A `{name}` outside this list would reach the trainer as it is.
std::vector<std::string> command_placeholders();

/// The same values as BIGMAC_* variables (`BIGMAC_GATE`, `BIGMAC_GATE_CONFIG`, `BIGMAC_PP`, ...),
/// plus every schema key as BIGMAC_<TABLE>_<KEY>, so a trainer can read either.
std::map<std::string, std::string> gate_environment(
    const config::Config& gate_config, const std::map<std::string, std::string>& placeholders);

/// The trainer argv of one gate: bigmac-train with its gate file and `{log_file}`, or the
/// user's template with the gate placeholders substituted.
std::vector<std::string> trainer_argv(const config::Config& gate_config,
                                      const std::filesystem::path& trainer_binary,
                                      const std::map<std::string, std::string>& placeholders);

}  // namespace bigmac::launch
