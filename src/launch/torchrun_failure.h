#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "proc/rank_process.h"

namespace bigmac::launch {

/// The failure torchrun names as "Root Cause (first observed failure)" in its ChildFailedError
/// summary: torch.distributed.elastic's own root-cause attribution, read back as data.
struct TorchrunRootCause {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  proc::ExitStatus status;  ///< elastic writes a signal as a negative exit code
};

/// Finds the root-cause block in torchrun's stderr; nullopt when there is none.
std::optional<TorchrunRootCause> parse_torchrun_root_cause(std::string_view stderr_text);

/// The best error line of one local rank from the stderr.log torchrun keeps under
/// `torchrun_log_dir/<run id>/attempt_<n>/<local_rank>/` (latest attempt); empty when none.
std::string torchrun_rank_error_line(const std::filesystem::path& torchrun_log_dir, int local_rank);

}  // namespace bigmac::launch
