#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace bigmac::proc {

/// Replaces this process with `argv` (argv[0] found as find_program finds it), after setting
/// `env` in this process's environment. For exec-wrappers that give a program its environment
/// and then step aside. Returns only when the exec failed, with the reason.
Error exec_program(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env);

/// Sends this process's stdout and stderr to two files (created, appended to), so that a
/// program exec'd next writes there: per-rank output files when a launcher mixes its ranks'
/// streams.
Expected<void> redirect_output(const std::filesystem::path& stdout_path,
                               const std::filesystem::path& stderr_path);

}  // namespace bigmac::proc
