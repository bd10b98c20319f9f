#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace bigmac::proc {

/// One row of /proc: enough to find leftovers, zombies and who holds a port.
struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';          ///< 'R', 'S', 'Z' (zombie), ...
  std::string command_line;  ///< argv joined by spaces; "[comm]" for kernel threads and zombies

  bool zombie() const { return state == 'Z'; }
};

/// Reads /proc/<pid>; nullopt when the process is gone (or never existed).
std::optional<ProcessInfo> read_process(pid_t pid);

/// The pids in /proc now. Never throws, whatever exits meanwhile.
std::vector<pid_t> all_pids();

/// Every process visible in /proc. Processes that vanish while scanning are skipped.
std::vector<ProcessInfo> list_processes();

/// Processes (zombies included) whose process group is `pgid`.
std::vector<ProcessInfo> processes_in_group(pid_t pgid);

/// Direct children (zombies included) of `parent`.
std::vector<ProcessInfo> children_of(pid_t parent);

/// argv of `pid` joined by spaces; empty when unreadable.
std::string command_line_of(pid_t pid);

}  // namespace bigmac::proc
