#include "cli/env_command.h"

#include <iostream>
#include <memory>

#include "adopt/environment.h"
#include "cli/common_options.h"
#include "core/exit_code.h"

namespace bigmac::cli {
namespace {

// As --version prints it; the commit only where the build names it for this file too.
#ifdef BIGMAC_COMMIT
constexpr const char* kToolVersion = BIGMAC_VERSION " (commit " BIGMAC_COMMIT ")";
#else
constexpr const char* kToolVersion = BIGMAC_VERSION;
#endif

struct EnvOptions {
  CommonOptions common;
  bool json = false;
};

int run_env(const EnvOptions& options) {
  auto config = load_config(options.common);
  if (!config) {
    print_errors(std::cerr, config.error());
    return to_int(ExitCode::kBadInput);
  }
  adopt::EnvironmentRequest request;
  request.tool_version = kToolVersion;
  request.config = &*config;
  request.config_file = options.common.config_file;
  request.config_sets = options.common.sets;
  const adopt::EnvironmentFacts facts = adopt::gather_environment(request);
  std::cout << (options.json ? adopt::environment_json(facts) : adopt::environment_text(facts));
  // The report is the product: what is missing is in it, and the command still succeeded.
  return to_int(ExitCode::kOk);
}

}  // namespace

void add_env_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<EnvOptions>();
  CLI::App* cmd = app.add_subcommand(
      "env",
      "Report what this host offers a training program, for bug reports and before a first "
      "run: the tool's version, the trainer's Python interpreter (the configuration's trainer "
      "command, else python3 on PATH and /usr/bin/python3) with its torch, CUDA, NCCL, Gloo "
      "and devices, whether the probe imports, torchrun and srun, the Slurm allocation, port "
      "29500 and a free port, the open-files limit, CPUs and hostname. Exit 0 whenever the "
      "report is printed (what is missing is in it), 2 for a configuration that does not load");
  add_config_options(*cmd, options->common);
  cmd->add_flag("--json", options->json, "print one JSON object instead of text");
  cmd->callback([options, &exit_code] { exit_code = run_env(*options); });
}

}  // namespace bigmac::cli
