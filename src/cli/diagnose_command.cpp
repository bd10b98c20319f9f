#include "cli/diagnose_command.h"

#include <iostream>
#include <memory>

#include "diagnose/log_diagnosis.h"

namespace bigmac::cli {

void add_diagnose_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<diagnose::DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Match log files or directories of logs against the diagnosis catalog: exit 0 when a "
      "diagnosis was found, 1 when none, 2 on unreadable input");
  cmd->add_option("logs", options->paths, "log files or directories of logs")->required();
  cmd->add_flag("--json", options->json, "print the diagnoses as JSON");
  cmd->add_option("--catalog", options->catalog,
                  "diagnosis catalog (default: the built-in stages/diagnoses.toml, or "
                  "$BIGMAC_DIAGNOSES)");
  cmd->callback([options, &exit_code] {
    exit_code = diagnose::run_diagnose(*options, std::cout, std::cerr);
  });
}

}  // namespace bigmac::cli
