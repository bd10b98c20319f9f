#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `config check` and `config show`; the chosen command's exit code lands in `exit_code`.
void add_config_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
