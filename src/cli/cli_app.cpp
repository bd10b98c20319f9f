#include "cli/cli_app.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/adopt_command.h"
#include "cli/audit_command.h"
#include "cli/baseline_command.h"
#include "cli/command_help.h"
#include "cli/common_options.h"
#include "cli/config_command.h"
#include "cli/diagnose_command.h"
#include "cli/env_command.h"
#include "cli/parse_command.h"
#include "cli/run_command.h"
#include "core/edit_distance.h"
#include "core/exit_code.h"

namespace bigmac::cli {
namespace {

// CLI11 answers a misspelt command with "A subcommand is required"; this names the word it did
// not know and suggests the closest command of that level.
std::optional<std::string> unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  std::string path = "bigmac-bringup";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg.front() == '-') return std::nullopt;
    const auto commands = level->get_subcommands([](const CLI::App*) { return true; });
    if (commands.empty()) return std::nullopt;
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    for (CLI::App* c : commands) {
      names.push_back(c->get_name());
      if (c->get_name() == arg) next = c;
    }
    if (next == nullptr) {
      const std::vector<std::string_view> views(names.begin(), names.end());
      const auto near = closest_match(arg, views);
      return fmt::format("{}: unknown command '{}'{}; the commands are: {}", path, arg,
                         near ? fmt::format(" (did you mean '{}'?)", *near) : "",
                         fmt::join(names, ", "));
    }
    level = next;
    path += " " + arg;
  }
  return std::nullopt;
}

}  // namespace

int run_cli(int argc, char** argv) {
  if (argc > 0) set_invoked_as(argv[0]);
  // Named here, not from argv[0]: help says "Usage: bigmac-bringup ...", not a build path.
  CLI::App app{"bigmac-bringup: bring a training program from one GPU to many, gate by gate",
               "bigmac-bringup"};
  app.set_version_flag("--version", std::string("bigmac-bringup ") + BIGMAC_VERSION + " (commit " +
                                        BIGMAC_COMMIT + ")");
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
  add_adopt_command(app, exit_code);
  add_env_command(app, exit_code);
  add_completion_command(app, exit_code);
  finish_help(app);

  if (auto unknown = unknown_command(app, argc, argv)) {
    std::cerr << "bigmac-bringup: error: " << *unknown << "\n";
    return to_int(ExitCode::kBadInput);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (auto unknown_option = unknown_option_message(app, e)) {
      std::cerr << "bigmac-bringup: error: " << *unknown_option << "\n";
      return to_int(ExitCode::kBadInput);
    }
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
