#include "proc/rank_process.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include "proc/signal_name.h"

namespace bigmac::proc {

std::string ExitStatus::describe() const {
  if (signal != 0) return "killed by " + signal_name(signal);
  return fmt::format("exit code {}", exit_code);
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus out;
  if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  }
  return out;
}

}  // namespace bigmac::proc
