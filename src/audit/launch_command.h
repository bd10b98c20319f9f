#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bigmac::audit {

/// One argv element of a launch script's command after expansion.
struct ArgWord {
  std::string text;
  int line = 0;
  bool literal = true;         ///< every part was known (no unset variable, no $(...))
  std::string variable;        ///< the variable the whole word came from ($PP, "${PP}"), if one
  bool from_fallback = false;  ///< the value is ${VAR:-fallback}'s fallback
};

/// `--name value`, `--name=value` or a bare `--flag`, with the setting name as written.
struct CommandFlag {
  std::string name;  ///< "--nproc_per_node", "-N"
  std::optional<ArgWord> value;
  int line = 0;
};

/// A program that starts other programs: torchrun, srun, mpirun, deepspeed, accelerate
/// launch, sbatch, python -m torch.distributed.run.
struct LauncherCall {
  std::string name;  ///< "torchrun", "srun", ...
  std::vector<CommandFlag> flags;
};

/// What one command line starts: the launchers in front (srun torchrun ...), the program, its
/// flags and positional arguments.
struct LaunchCommand {
  std::vector<LauncherCall> launchers;
  std::optional<ArgWord> program;  ///< a script path ("train.py") or, with `module`, a module
  bool module = false;             ///< python -m NAME
  bool shell_script = false;       ///< bash/sh/source/sbatch SCRIPT
  std::vector<CommandFlag> flags;
  std::vector<ArgWord> positionals;
};

/// Splits an expanded argv into launchers, program and program arguments, knowing which
/// launcher flags take a value. Commands that start nothing return an empty result.
LaunchCommand parse_launch_command(const std::vector<ArgWord>& argv);

/// The long spelling a launcher's short flag stands for ("srun -N" -> "nodes"), else "".
std::string long_flag_name(const std::string& launcher, const std::string& flag);

}  // namespace bigmac::audit
