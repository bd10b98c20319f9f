#include "cli/common_options.h"

#include <ostream>

namespace bigmac::cli {

void add_config_options(CLI::App& command, CommonOptions& options) {
  command.add_option("-c,--config", options.config_file,
                     "TOML configuration (default: the built-in defaults, = configs/demo.toml)");
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

void print_errors(std::ostream& err, const Errors& errors) {
  for (const Error& e : errors) err << "bigmac-bringup: error: " << e.format() << "\n";
}

}  // namespace bigmac::cli
