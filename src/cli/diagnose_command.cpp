#include "cli/diagnose_command.h"

#include <iostream>
#include <memory>

#include "attempt/attempt_folder.h"
#include "cli/common_options.h"
#include "diagnose/log_diagnosis.h"
#include "gates/configuration_check.h"
#include "gates/gate_spec.h"

namespace bigmac::cli {

namespace {
struct DiagnoseArguments {
  diagnose::DiagnoseOptions options;
  CommonOptions common;
};
}  // namespace

void add_diagnose_command(CLI::App& app, int& exit_code) {
  auto arguments = std::make_shared<DiagnoseArguments>();
  diagnose::DiagnoseOptions& options = arguments->options;
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Match log files or directories of logs against the diagnosis catalog: exit 0 when a "
      "diagnosis was found, 1 when none, 2 on unreadable input");
  cmd->add_option("logs", options.paths, "log files or directories of logs");
  cmd->add_flag("--json", options.json, "print the diagnoses as JSON");
  cmd->add_flag("--coverage", options.coverage,
                "print what the message catalog covers, by library: messages collected from "
                "the sources, classified, matchable, diagnosed (stages/messages/)");
  cmd->add_option("--catalog", options.catalog,
                  "diagnosis catalog (default: the built-in stages/diagnoses.toml, or "
                  "$BIGMAC_DIAGNOSES)");
  add_config_options(*cmd, arguments->common);
  cmd->callback([arguments, &exit_code] {
    // The gates a diagnosis may send the user back to are the gate files' (./stages, else the
    // installed ones), as for run-all.
    auto specs = gates::load_gate_specs(gates::stages_directory({}));
    if (!specs) {
      print_errors(std::cerr, specs.error());
      exit_code = to_int(exit_code_for(specs.error()));
      return;
    }
    std::vector<std::string> gate_ids;
    for (const gates::GateSpec& spec : *specs) gate_ids.push_back(spec.id);
    auto parser = log_parser_options(arguments->common);
    if (!parser) {
      print_errors(std::cerr, parser.error());
      exit_code = to_int(exit_code_for(parser.error()));
      return;
    }
    arguments->options.parser = std::move(*parser);
    arguments->options.merge_folder =
        [](const std::filesystem::path& folder,
           std::vector<logs::RankLog> read) -> Expected<std::vector<logs::RankLog>> {
      if (!attempt::is_attempt_folder(folder)) return read;
      return attempt::attempt_rank_logs(folder, std::move(read));
    };
    exit_code = diagnose::run_diagnose(arguments->options, std::cout, std::cerr, gate_ids);
  });
}

}  // namespace bigmac::cli
