#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "proc/process_runner.h"

namespace bigmac::audit {

/// The Python interpreter and the helper script that read Python sources with Python's own
/// `ast` module (src/audit/audit_python.py and the audit_python_model.py it imports; the build
/// copies both beside the program).
struct PythonHelper {
  std::string interpreter;       ///< a python3 that exists
  std::filesystem::path script;  ///< audit_python.py

  /// Finds the helper beside the program (`<bin>/../share/bigmac-bringup/audit_python.py`,
  /// where the build and an install put it), else in the source tree this program was built
  /// from; and `python` (a path or a name looked up in PATH; default "python3"). The error
  /// says which is missing and what to do.
  static Expected<PythonHelper> locate(const std::filesystem::path& program_dir,
                                       const std::string& python);

  /// Runs the helper on `files` through `runner` (argv vector, its own process group) and
  /// returns what it printed on stdout: one JSON document. The error names the helper and
  /// quotes its stderr when it fails.
  Expected<std::string> run(proc::ProcessRunner& runner,
                            const std::vector<std::string>& files) const;
};

}  // namespace bigmac::audit
