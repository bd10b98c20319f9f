#pragma once

#include <string>

#include "core/error.h"

namespace bigmac::proc {

/// Where `name` would be executed from: itself when it contains a '/', else the first
/// executable match in `path_var` (a PATH value). The error says which and why
/// (missing, not executable, not in PATH), so preflight and spawn report the same thing.
Expected<std::string> find_program(const std::string& name, const std::string& path_var);

/// find_program with the orchestrator's own PATH.
Expected<std::string> find_program(const std::string& name);

}  // namespace bigmac::proc
