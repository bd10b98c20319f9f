#pragma once

#include <string>
#include <string_view>

#include "audit/project_facts.h"

namespace bigmac::audit {

/// Reads a launch script or sbatch file (`file` names it in places): variable assignments and
/// exports, `VAR=value cmd` prefixes, #SBATCH directives, and the flags of every launcher and
/// program it starts, with variables expanded as the script sets them. Adds the places of
/// parallel settings and the files the script names to `facts`. Runs nothing.
void read_shell_script(std::string_view text, const std::string& file, ProjectFacts& facts);

}  // namespace bigmac::audit
