#include "cli/parse_command.h"

#include <iostream>
#include <memory>
#include <optional>

#include "cli/common_options.h"
#include "logs/field_map.h"
#include "logs/log_format.h"
#include "logs/parse_summary.h"

namespace bigmac::cli {
namespace {

struct ParseOptions {
  std::vector<std::string> paths;
  std::string format = "auto";
  bool json = false;
  CommonOptions common;
};

int parse(const ParseOptions& options) {
  auto format = logs::parse_format_name(options.format);
  if (!format) {
    print_errors(std::cerr, {format.error()});
    return to_int(ExitCode::kBadInput);
  }
  // A custom [logs.fields] map comes from the configuration, when one is given.
  std::optional<logs::FieldMap> custom;
  if (!options.common.config_file.empty() || !options.common.sets.empty()) {
    auto config = load_config(options.common);
    if (!config) {
      print_errors(std::cerr, config.error());
      return to_int(exit_code_for(config.error()));
    }
    if (!config->log_fields.empty()) {
      auto map = logs::FieldMap::compile(config->log_fields);
      if (!map) {
        print_errors(std::cerr, {map.error()});
        return to_int(ExitCode::kBadInput);
      }
      custom = std::move(*map);
    }
  }
  return logs::run_parse(options.paths, *format, options.json, std::cout, std::cerr,
                         custom ? &*custom : nullptr);
}

}  // namespace

void add_parse_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ParseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "parse", "Read rank logs (any supported format) and print what was found per rank");
  cmd->add_option("logs", options->paths, "log files (one per rank, or merged)")->required();
  cmd->add_option("--format", options->format,
                  "auto|bigmac|kv|megatron|torchtitan|regex (auto: detect from the first lines)");
  cmd->add_flag("--json", options->json, "print JSON");
  add_config_options(*cmd, options->common);
  cmd->callback([options, &exit_code] { exit_code = parse(*options); });
}

}  // namespace bigmac::cli
