#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `run-all`, `run GATE`, `resume [RUN_DIR]`, `status [RUN_DIR]` and `plan`.
void add_run_commands(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
