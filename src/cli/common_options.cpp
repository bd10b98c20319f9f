#include "cli/common_options.h"

#include <ostream>

namespace bigmac::cli {

CLI::Validator named_value(std::string what) {
  return CLI::Validator(
      [what](std::string& value) -> std::string {
        if (value.empty()) return "expected " + what + ", found an empty value";
        if (value == "--") return "expected " + what + ", found '--' (a value is missing)";
        return {};
      },
      "", "named_value");
}

void add_config_options(CLI::App& command, CommonOptions& options) {
  command
      .add_option("-c,--config", options.config_file,
                  "TOML configuration (default: the built-in defaults, = configs/demo.toml)")
      ->check(named_value("a configuration file"));
  command.add_option("--set", options.sets,
                     "override one value: table.key=value (repeatable; beats file and env)")
      ->take_all()
      ->allow_extra_args(false);
}

tl::expected<config::Config, Errors> load_config(const CommonOptions& options) {
  config::ConfigSources sources;
  if (!options.config_file.empty()) sources.file = options.config_file;
  sources.overrides = options.sets;
  sources.env = config::read_env();
  return config::load_config(sources);
}

tl::expected<logs::ParserOptions, Errors> log_parser_options(const CommonOptions& options) {
  if (options.config_file.empty() && options.sets.empty()) return logs::ParserOptions{};
  auto config = load_config(options);
  if (!config) return tl::unexpected(config.error());
  auto parser = logs::parser_options(*config);
  if (!parser) return tl::unexpected(Errors{parser.error()});
  return std::move(*parser);
}

void print_errors(std::ostream& err, const Errors& errors) {
  for (const Error& e : errors) err << "bigmac-bringup: error: " << e.format() << "\n";
}

}  // namespace bigmac::cli
