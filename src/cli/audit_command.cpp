#include "cli/audit_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "audit/audit_report.h"
#include "audit/project_audit.h"
#include "core/exit_code.h"
#include "core/json_file.h"
#include "proc/posix_process_runner.h"

namespace bigmac::cli {
namespace {

struct AuditCommandOptions {
  audit::AuditOptions audit;
  bool json = false;
};

std::filesystem::path program_directory() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : self.parent_path();
}

int run_audit(AuditCommandOptions& options) {
  options.audit.program_dir = program_directory();
  proc::PosixProcessRunner runner;
  auto result = audit::audit_project(options.audit, runner);
  if (!result) {
    for (const Error& e : result.error())
      std::cerr << "bigmac-bringup audit: " << e.format() << "\n";
    return to_int(exit_code_for(result.error()));
  }
  if (options.json) {
    std::cout << json_text(audit::audit_json(*result), 2) << "\n";
  } else {
    std::cout << audit::audit_text(*result);
  }
  return to_int(result->findings.empty() ? ExitCode::kOk : ExitCode::kGateFailed);
}

}  // namespace

void add_audit_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AuditCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "audit",
      "Read your training project (launch scripts, sbatch files, YAML/TOML/JSON configs, Python "
      "argument parsers, config classes and model) without running it, and list where each "
      "parallel setting is written, read and overridden: exit 0 with no finding, 1 with "
      "findings, 2 on unreadable input");
  cmd->add_option("paths", options->audit.paths, "files or directories (default: .)");
  cmd->add_flag("--json", options->json, "print the inventory and findings as JSON");
  cmd->add_option("--python", options->audit.python,
                  "Python interpreter that reads the Python sources with its ast module "
                  "(default: python3 from PATH)");
  cmd->callback([options, &exit_code] { exit_code = run_audit(*options); });
}

}  // namespace bigmac::cli
