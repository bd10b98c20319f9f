#include "cli/adopt_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "adopt/adoption.h"
#include "cli/common_options.h"
#include "core/atomic_file.h"
#include "core/exit_code.h"
#include "launch/clock.h"
#include "launch/launch_plan.h"
#include "proc/posix_process_runner.h"

namespace bigmac::cli {
namespace {

struct AdoptCommandOptions {
  adopt::AdoptOptions adopt;
  std::string output = "-";
  bool force = false;
};

int fail(const Error& e) {
  std::cerr << "bigmac-bringup adopt: error: " << e.format() << "\n";
  return to_int(exit_code_for(e.kind));
}

int run_adopt(const AdoptCommandOptions& options) {
  const bool to_stdout = options.output == "-";
  std::error_code ec;
  if (!to_stdout && !options.force && std::filesystem::exists(options.output, ec)) {
    return fail(make_error(ErrorKind::kUsage,
                           options.output + " exists; adopt does not overwrite it",
                           "name another file with -o, or add --force"));
  }
  proc::PosixProcessRunner runner;
  launch::SteadyClock clock;
  auto adoption = adopt::adopt_command(options.adopt, runner, clock);
  if (!adoption) return fail(adoption.error());
  // The report goes where the configuration does not, so `adopt -- ... > x.toml` gives a file.
  std::ostream& report = to_stdout ? std::cerr : std::cout;
  report << adoption->report;
  if (to_stdout) {
    std::cout << adoption->config_text;
    return to_int(ExitCode::kOk);
  }
  if (auto written = write_file_atomically(options.output, adoption->config_text); !written)
    return fail(written.error());
  report << "wrote " << options.output
         << "; next: " << invoked_program(std::filesystem::current_path()) << " run-all -c "
         << launch::quote_for_display(options.output) << " --until single\n";
  return to_int(ExitCode::kOk);
}

}  // namespace

void add_adopt_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AdoptCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "adopt",
      "Run your training command once (one process, a few steps, the probe on), detect its log "
      "format, turn its seed/steps/batch/lr/log-file/config flags into placeholders and write a "
      "commented configuration to start from; print what each gate can check and what is "
      "missing. Exit 0 with a configuration, 2 when the command exits before a step or prints "
      "no loss, 3 when it cannot be started");
  cmd->add_option("-o,--output", options->output,
                  "file to write the configuration to (default -: stdout, the report on stderr)");
  cmd->add_flag("--force", options->force, "overwrite the -o file");
  cmd->add_option("--steps", options->adopt.steps, "steps of the trial run (default 5)");
  cmd->add_option("--timeout", options->adopt.timeout_s,
                  "seconds the trial may take before it is stopped (default 600); a program "
                  "that ignores SIGTERM then gets as long again, at most 10 s, before SIGKILL");
  cmd->add_option("--work-dir", options->adopt.work_dir,
                  "folder for the trial's output, kept (default: a temporary folder, removed "
                  "whatever the outcome unless --keep)");
  cmd->add_flag("--keep", options->adopt.keep, "keep the trial's output");
  cmd->add_option("command", options->adopt.command, "the command, after --")->required();
  cmd->callback([options, &exit_code] { exit_code = run_adopt(*options); });
}

}  // namespace bigmac::cli
