#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `adopt [-o FILE] [--force] [--steps N] [--timeout S] [--work-dir DIR] [--keep] -- CMD ARGS...`:
/// runs a training command once and drafts the configuration that brings it up (docs/adopt.md).
void add_adopt_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
