#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `baseline record [RUN_DIR]`, `baseline show FILE`, `baseline diff A B` and
/// `compare LOG... --baseline FILE [--gate ID]`.
void add_baseline_commands(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
