#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bigmac::adopt {

/// A command that starts with a launcher the tool runs itself: `accelerate launch [ITS OPTIONS]
/// SCRIPT ARGS` (also `python -m accelerate.commands.launch ...`). Every gate runs `accelerate
/// launch` with its own layout (launch.launcher = "accelerate", launch/launcher_commands.h), so
/// adopt tries and drafts the program itself, `PYTHON SCRIPT ARGS`, run by the interpreter that
/// runs accelerate, and keeps accelerate's options that are not the layout.
struct LauncherPrefix {
  std::string launcher;              ///< "accelerate"
  std::vector<std::string> program;  ///< [python, SCRIPT, ARGS...] or [python, -m, MODULE, ...]
  std::string config_file;           ///< --config_file's value: launch.accelerate.config_file
  /// Its other options, kept for every gate: launch.accelerate.extra_args.
  std::vector<std::string> extra_args;
  /// Options each gate sets itself (process and machine counts, rendezvous, log options,
  /// --multi_gpu, --cpu), as written: the report says they are left out.
  std::vector<std::string> dropped;
};

/// The prefix of `command`, when it is one; `interpreter_of` gives the Python interpreter of
/// the `accelerate` program (its #! line). None for any other command, and for an accelerate
/// command whose script cannot be found among its words (the error is then the trial's own).
std::optional<LauncherPrefix> strip_launcher(
    const std::vector<std::string>& command,
    std::string (*interpreter_of)(const std::string& program));

}  // namespace bigmac::adopt
