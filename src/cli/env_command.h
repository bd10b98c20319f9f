#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `env`: what this host offers a training program (the tool, the configured interpreter and
/// its torch, launchers, Slurm, ports, limits), as text or --json; docs/env.md.
void add_env_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
