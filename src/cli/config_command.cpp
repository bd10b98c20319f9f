#include "cli/config_command.h"

#include <iostream>
#include <memory>

#include "cli/common_options.h"
#include "config/config_printer.h"
#include "core/json_file.h"
#include "gates/configuration_check.h"

namespace bigmac::cli {
namespace {

struct ConfigCommandOptions {
  CommonOptions common;
  std::string stages;  ///< --stages DIR
  bool provenance = false;
  bool json = false;
};

int check(const ConfigCommandOptions& options) {
  // The same validation plan, run-all, run and resume apply, gates included.
  auto config = load_config(options.common);
  auto checked = config
                     ? gates::check_configuration(*config, gates::stages_directory(options.stages))
                     : tl::expected<gates::GateCatalog, Errors>(tl::unexpect, config.error());
  if (!checked) {
    print_errors(std::cerr, checked.error());
    std::cerr << "bigmac-bringup: configuration invalid: " << checked.error().size()
              << (checked.error().size() == 1 ? " error\n" : " errors\n");
    return to_int(exit_code_for(checked.error()));
  }
  const auto& d = config->derived;
  std::cout << "configuration valid: world_size " << d.world_size << " = pp "
            << config->parallel.pp_size << " × tp " << config->parallel.tp_size << " × dp " << d.dp
            << "; global batch " << d.global_batch << " = micro " << config->train.micro_batch_size
            << " × accum " << config->train.gradient_accumulation_steps << " × dp " << d.dp << "\n";
  return 0;
}

int show(const ConfigCommandOptions& options) {
  auto config = load_config(options.common);
  if (!config) {
    print_errors(std::cerr, config.error());
    return to_int(exit_code_for(config.error()));
  }
  config::PrintOptions print{options.provenance};
  if (options.json) {
    std::cout << json_text(config::config_to_json(*config, print), 2) << "\n";
  } else {
    std::cout << config::format_config(*config, print);
  }
  return 0;
}

}  // namespace

void add_config_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ConfigCommandOptions>();
  CLI::App* config = app.add_subcommand("config", "Check or show the effective configuration");
  config->require_subcommand(1);

  CLI::App* check_cmd = config->add_subcommand(
      "check", "Validate a configuration: exit 0 when valid, 2 with every violation when not");
  add_config_options(*check_cmd, options->common);
  check_cmd->add_option("--stages", options->stages, "gate definitions (default: ./stages)");
  check_cmd->callback([options, &exit_code] { exit_code = check(*options); });

  CLI::App* show_cmd = config->add_subcommand(
      "show", "Print the effective configuration (launch, schedule, model) with derived values");
  add_config_options(*show_cmd, options->common);
  show_cmd->add_flag("--provenance", options->provenance,
                     "say where every value came from; values set twice list every place");
  show_cmd->add_flag("--json", options->json, "print JSON");
  show_cmd->callback([options, &exit_code] { exit_code = show(*options); });
}

}  // namespace bigmac::cli
