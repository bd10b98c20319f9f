#pragma once

#include <string>
#include <vector>

#include "core/error.h"

namespace bigmac::audit {

/// The kinds of file the audit reads.
enum class FileKind { kShell, kYaml, kToml, kJson, kPython };

struct ProjectFile {
  std::string path;  ///< as it will be shown: relative to the directory the audit runs in
  FileKind kind;
};

/// The files under `paths` (files or directories, walked recursively) that the audit reads:
/// shell scripts (*.sh, *.bash, *.sbatch, *.slurm, or a shell #! line), YAML, TOML, JSON and
/// Python. Hidden directories, __pycache__, virtual environments, node_modules, reports/ and
/// build trees (build, build-*, cmake-build-*) are skipped, and so are JSON files over 1 MiB (data, not configuration). A path
/// that does not exist or cannot be listed is an error naming it.
tl::expected<std::vector<ProjectFile>, Errors> find_project_files(
    const std::vector<std::string>& paths);

}  // namespace bigmac::audit
