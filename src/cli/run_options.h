#pragma once

#include <string>

#include "attempt/run_context.h"
#include "cli/common_options.h"

namespace bigmac::cli {

/// Options of the commands that run or plan gates.
struct RunCommandOptions {
  CommonOptions common;
  std::string run_dir;       ///< --run-dir; empty: reports/<run-id> (resume/status: reports/latest)
  std::string from;          ///< --from GATE
  std::string until;         ///< --until GATE
  std::string baseline;      ///< --baseline FILE; empty: baselines/<config name>.json
  bool no_baseline = false;  ///< --no-baseline: no stored baseline; the first gate records one
  std::string stages;        ///< --stages DIR; empty: ./stages, else the installed one
  bool ci = false;           ///< --ci: no terminal animation, JUnit always written
  bool strict = false;       ///< --strict: every unobservable check fails its gate
};

/// Loads the configuration the options name and everything a run needs beside it.
tl::expected<attempt::RunContext, Errors> make_run_context(const RunCommandOptions& options);

}  // namespace bigmac::cli
