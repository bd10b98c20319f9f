#pragma once

namespace bigmac::cli {

/// Parses the command line, runs the command, prints any error once, returns the exit code
/// (docs/architecture.md §4).
int run_cli(int argc, char** argv);

}  // namespace bigmac::cli
