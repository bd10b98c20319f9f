#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `parse LOG... [--format F] [--json] [-c FILE]`: what the log parsers read from each rank.
void add_parse_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
