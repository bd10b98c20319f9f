#include "cli/parse_command.h"

#include <iostream>
#include <memory>

#include "cli/common_options.h"
#include "logs/log_format.h"
#include "logs/parse_summary.h"

namespace bigmac::cli {
namespace {

struct ParseArguments {
  std::vector<std::string> paths;
  std::string format;  ///< empty: the configuration's trainer.log_format, else auto
  bool json = false;
  bool records = false;
  CommonOptions common;
};

int parse(const ParseArguments& arguments) {
  auto options = log_parser_options(arguments.common);
  if (!options) {
    print_errors(std::cerr, options.error());
    return to_int(exit_code_for(options.error()));
  }
  if (!arguments.format.empty()) {
    auto format = logs::parse_format_name(arguments.format);
    if (!format) {
      print_errors(std::cerr, {format.error()});
      return to_int(ExitCode::kBadInput);
    }
    options->format = *format;  // --format wins over the configuration; its [logs.fields] stay
  }
  const logs::ParseOutput output = arguments.records ? logs::ParseOutput::kRecords
                                   : arguments.json  ? logs::ParseOutput::kJson
                                                     : logs::ParseOutput::kText;
  return logs::run_parse(arguments.paths, *options, output, std::cout, std::cerr);
}

}  // namespace

void add_parse_command(CLI::App& app, int& exit_code) {
  auto arguments = std::make_shared<ParseArguments>();
  CLI::App* cmd = app.add_subcommand(
      "parse", "Read rank logs (any supported format) and print what was found per rank");
  cmd->add_option("logs", arguments->paths, "log files (one per rank, or merged)")->required();
  cmd->add_option("--format", arguments->format,
                  "auto|bigmac|kv|megatron|torchtitan|regex|pydict|plain (default: the "
                  "configuration's trainer.log_format with -c, else auto: detect from the first "
                  "record lines)");
  CLI::Option* json = cmd->add_flag("--json", arguments->json, "print the summary as JSON");
  cmd->add_flag("--records", arguments->records,
                "print every record as a JSON line, normalised, as the adapters read it")
      ->excludes(json);
  add_config_options(*cmd, arguments->common);
  cmd->callback([arguments, &exit_code] { exit_code = parse(*arguments); });
}

}  // namespace bigmac::cli
