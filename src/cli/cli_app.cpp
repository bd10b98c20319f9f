#include "cli/cli_app.h"

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/audit_command.h"
#include "cli/baseline_command.h"
#include "cli/config_command.h"
#include "cli/diagnose_command.h"
#include "cli/parse_command.h"
#include "cli/run_command.h"
#include "core/exit_code.h"

namespace bigmac::cli {

int run_cli(int argc, char** argv) {
  CLI::App app{"bigmac-bringup: bring a training program from one GPU to many, gate by gate"};
  app.set_version_flag("--version", std::string("bigmac-bringup ") + BIGMAC_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 all requested gates passed / command succeeded; 1 a gate failed; "
      "2 bad input (usage, config, unreadable file); 3 infrastructure (could not launch); "
      "130 interrupted.");

  int exit_code = 0;
  add_run_commands(app, exit_code);
  add_config_command(app, exit_code);
  add_baseline_commands(app, exit_code);
  add_parse_command(app, exit_code);
  add_diagnose_command(app, exit_code);
  add_audit_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // Help and version are successes; every other parse problem is a usage error.
    return code == 0 ? 0 : to_int(ExitCode::kBadInput);
  } catch (const std::exception& e) {
    // The one catch at the top: lower layers report input problems as values, so anything
    // arriving here is a fault of the tool itself.
    std::cerr << "bigmac-bringup: internal error: " << e.what() << "\n";
    return to_int(ExitCode::kInfrastructure);
  }
  return exit_code;
}

}  // namespace bigmac::cli
