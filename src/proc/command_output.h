#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "proc/rank_process.h"

namespace bigmac::proc {

/// What a short helper command (nvidia-smi, sinfo, scontrol, scancel) printed and how it ended.
struct CommandOutput {
  ExitStatus status;
  bool timed_out = false;  ///< stopped by us at the limit; `status` is then the kill
  std::string out;         ///< stdout, at most the first MiB
  std::string err;         ///< stderr, at most the first MiB

  bool ok() const { return !timed_out && status.success(); }
  /// The first non-empty line of stderr, else of stdout: what to quote when it failed.
  std::string first_line() const;
};

/// Runs `argv` (never through a shell) to completion in its own process group, with `env`
/// added to this process's environment, and captures its output. After `limit` the group is
/// stopped (TERM, then KILL) and `timed_out` is set. The error is a failure to start it.
Expected<CommandOutput> run_command(const std::vector<std::string>& argv,
                                    std::chrono::milliseconds limit,
                                    const std::map<std::string, std::string>& env = {});

}  // namespace bigmac::proc
