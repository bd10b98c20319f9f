#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `diagnose LOG... [--json] [--catalog FILE]`: the diagnosis catalog over any logs.
void add_diagnose_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
