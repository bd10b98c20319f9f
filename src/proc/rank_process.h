#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace bigmac::proc {

/// How to start one rank: an argv vector (never a shell string), environment additions, working
/// directory and the two files its stdout and stderr are copied to.
struct RankSpec {
  int rank = 0;
  std::vector<std::string> argv;           ///< argv[0] is a path or a name looked up in PATH
  std::map<std::string, std::string> env;  ///< set on top of the orchestrator's environment
  std::filesystem::path working_dir;       ///< empty: the orchestrator's
  std::filesystem::path stdout_path;       ///< empty: stdout is streamed but not stored
  std::filesystem::path stderr_path;       ///< empty: stderr is streamed but not stored
};

/// How a process ended: an exit code or the signal that killed it.
struct ExitStatus {
  int exit_code = 0;  ///< meaningful when `signal` is 0
  int signal = 0;     ///< the terminating signal, 0 when it exited

  bool success() const { return signal == 0 && exit_code == 0; }
  /// "exit code 3" or "killed by SIGSEGV".
  std::string describe() const;
  /// Decodes a waitpid() status word.
  static ExitStatus from_wait_status(int status);
};

/// Which of a rank's two output streams bytes came from.
enum class Stream { kStdout, kStderr };

/// A rank that finished, as the runner reaped it.
struct RankExit {
  int rank = 0;
  pid_t pid = 0;
  ExitStatus status;
};

}  // namespace bigmac::proc
