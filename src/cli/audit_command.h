#pragma once

#include <CLI/CLI.hpp>

namespace bigmac::cli {

/// `audit [PATH...] [--json] [--python PATH]`: where each parallel setting of a user's project
/// is written, read and overridden, and what is wrong with it.
void add_audit_command(CLI::App& app, int& exit_code);

}  // namespace bigmac::cli
