#pragma once

#include <sys/types.h>

namespace bigmac::proc {

/// What the shepherd needs to start its rank: everything prepared before fork, because between
/// fork and exec only async-signal-safe calls are allowed.
struct ShepherdLaunch {
  pid_t orchestrator = 0;  ///< the parent whose death ends the rank
  int stdin_fd = -1;       ///< /dev/null
  int stdout_fd = -1;      ///< write end of the stdout pipe
  int stderr_fd = -1;      ///< write end of the stderr pipe
  int report_fd = -1;      ///< errno of a failed chdir/exec goes here; close-on-exec
  const char* working_dir = nullptr;
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int end_signal = 0;  ///< shepherd_end_signal(), read before fork
};

/// The signal that tells a shepherd to kill its whole subtree and exit: sent by the kernel when
/// the orchestrator dies (PR_SET_PDEATHSIG) and by the orchestrator when a rank outlives the
/// SIGTERM grace. A real-time signal, so no trainer convention (SIGUSR1 for a checkpoint,
/// SIGHUP for a terminal) can trigger it by accident.
int shepherd_end_signal();

/// Runs in the child of fork() and never returns: the process between the orchestrator and one
/// rank. It makes itself a child subreaper, forks and execs the rank, and stays as the rank's
/// parent, so every process the rank starts — also one that leaves the process group or starts
/// its own session, like torchrun's workers under torch 2 — is re-parented to it when its own
/// parent dies, and can be found and killed:
///   - when the rank exits, the shepherd kills whatever the rank left running and exits the way
///     the rank did (the same code, or the same signal), so the orchestrator sees the rank's exit;
///   - when the orchestrator dies, even by SIGKILL, the kernel sends `end_signal`: the shepherd
///     sends the rank SIGTERM, so that its own teardown runs (srun ends the job step on every
///     node, a torchrun agent stops its workers), waits up to 20 s for it, then kills the rank
///     and every descendant before it exits;
///   - SIGTERM/SIGINT reach the rank through the process group; the shepherd leaves them to it.
/// Only system calls from here on: the orchestrator may have had threads when it forked.
[[noreturn]] void run_rank_shepherd(const ShepherdLaunch& launch);

}  // namespace bigmac::proc
