#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "audit/finding.h"
#include "audit/project_facts.h"
#include "audit/run_graph.h"
#include "core/error.h"
#include "proc/process_runner.h"

namespace bigmac::audit {

struct AuditOptions {
  std::vector<std::string> paths;     ///< files or directories; "." when empty
  std::filesystem::path program_dir;  ///< where the running program lives (finds the helper)
  std::string python = "python3";     ///< interpreter for the Python reader
};

/// The inventory of a project's parallel settings and what is wrong with it.
struct ProjectAudit {
  ProjectFacts facts;
  std::vector<RunGroup> runs;
  std::vector<Finding> findings;       ///< sorted by file, line, kind
  std::vector<std::string> unchecked;  ///< what could not be judged, and why
};

/// Reads every file under `options.paths` without running any of it (Python sources through
/// the helper, started by `runner`), then checks layers, conflicts, derived values,
/// constraints, the model's layer containers and stages, and the effective-configuration
/// print. Errors: an unreadable or malformed file (which, where, why), no Python interpreter
/// while there are Python files.
tl::expected<ProjectAudit, Errors> audit_project(const AuditOptions& options,
                                                 proc::ProcessRunner& runner);

}  // namespace bigmac::audit
