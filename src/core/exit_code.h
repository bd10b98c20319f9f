#pragma once

namespace bigmac {

/// Process exit codes of both programs (docs/architecture.md §4). Documented in the README.
enum class ExitCode : int {
  kOk = 0,              ///< every requested gate passed / the command did what was asked
  kGateFailed = 1,      ///< a gate failed; the verdict was printed
  kBadInput = 2,        ///< usage, configuration or an unreadable/malformed input file
  kInfrastructure = 3,  ///< could not launch: missing binary, permission, no port
  kInterrupted = 130,   ///< SIGINT/SIGTERM (128 + 2)
};

constexpr int to_int(ExitCode code) { return static_cast<int>(code); }

}  // namespace bigmac
