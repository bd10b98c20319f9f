#include "cli/run_command.h"

#include <ctime>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli/gate_execution.h"
#include "cli/interrupt_flag.h"
#include "cli/run_context.h"
#include "cli/trainer_command.h"
#include "core/atomic_file.h"
#include "diagnose/catalog.h"
#include "gates/run_status.h"
#include "launch/clock.h"
#include "launch/launch_planner.h"
#include "report/line_printer.h"
#include "report/progress.h"
#include "report/report_files.h"
#include "report/report_input.h"

namespace bigmac::cli {
namespace fs = std::filesystem;
namespace {

enum class RunMode { kAll, kOne, kResume };

struct RunRequest {
  RunCommandOptions options;
  std::string gate;     ///< run GATE
  std::string run_dir;  ///< resume/status positional
  bool json = false;    ///< status --json
};

int fail(const Errors& errors) {
  print_errors(std::cerr, errors);
  return to_int(exit_code_for(errors));
}

/// reports/latest resolved, or a fresh reports/<run-id>.
fs::path choose_run_dir(const RunRequest& request, RunMode mode) {
  if (!request.run_dir.empty()) return request.run_dir;
  if (!request.options.run_dir.empty()) return request.options.run_dir;
  if (mode != RunMode::kAll && fs::exists(reports_root() / "latest")) {
    return fs::canonical(reports_root() / "latest");
  }
  fs::path dir = reports_root() / gates::make_run_id(std::time(nullptr));
  for (int suffix = 1; fs::exists(dir); ++suffix) {
    dir = reports_root() / gates::make_run_id(std::time(nullptr), suffix);
  }
  return dir;
}

/// The -c/--set/--baseline a run was started with, kept in its directory so that `resume` and
/// `run GATE` without them continue with the same configuration.
constexpr const char* kInvocationFile = "invocation.json";

RunCommandOptions with_recorded_invocation(RunCommandOptions options, const fs::path& run_path) {
  if (!options.common.config_file.empty() || !options.common.sets.empty()) return options;
  auto text = read_file(run_path / kInvocationFile);
  if (!text) return options;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return options;
  options.common.config_file = j.value("config", std::string());
  options.common.sets = j.value("set", std::vector<std::string>());
  if (options.baseline.empty()) options.baseline = j.value("baseline", std::string());
  return options;
}

int run(const RunRequest& request, RunMode mode) {
  const fs::path run_path = choose_run_dir(request, mode);
  const RunCommandOptions options = mode == RunMode::kAll
                                        ? request.options
                                        : with_recorded_invocation(request.options, run_path);
  auto context = RunContext::create(options);
  if (!context) return fail(context.error());
  if (mode == RunMode::kResume && !fs::exists(run_path / "state.json")) {
    return fail({make_error(ErrorKind::kInput,
                            fmt::format("no run to resume in {} (no state.json)",
                                        run_path.string()),
                            "start one with run-all")});
  }
  auto dir = gates::RunDirectory::open(run_path);
  if (!dir) return fail({dir.error()});
  auto stored = dir->load();
  if (!stored) return fail({stored.error()});
  gates::RunState state = stored->value_or(
      gates::RunState::fresh(run_path.filename().string(), context->catalog.ids()));
  (void)gates::point_latest(run_path.parent_path(), run_path);
  const nlohmann::json invocation = {{"config", options.common.config_file},
                                     {"set", options.common.sets},
                                     {"baseline", options.baseline}};
  (void)write_file_atomically(run_path / kInvocationFile, invocation.dump(2) + "\n");

  auto inputs = context->inputs(run_path);
  if (!inputs) return fail(inputs.error());
  gates::Observation start;
  if (mode == RunMode::kResume) {
    start = gates::Resume{*inputs};
  } else if (mode == RunMode::kOne) {
    start = gates::Begin{request.gate, request.gate, *inputs};
  } else {
    start = gates::Begin{request.options.from, request.options.until, *inputs};
  }

  auto catalog = diagnose::builtin_catalog();
  if (!catalog) return fail({catalog.error()});
  auto diagnoser = diagnose::Diagnoser::create(std::move(*catalog));
  if (!diagnoser) return fail({diagnoser.error()});

  report::LinePrinter printer = report::LinePrinter::for_stdout(request.options.ci);
  report::TerminalProgress progress(printer, [] {
    return launch::seconds_of(std::chrono::steady_clock::now().time_since_epoch());
  });
  progress.message(fmt::format("run directory: {}", run_path.string()));
  progress.run_started(state.run_id, state.gates.size());
  const std::atomic<bool>& cancel = install_interrupt_flag();
  ProcessGateExecutor executor(*context, *dir, *diagnoser, cancel, progress);
  gates::RunOutput output{[&](const gates::RunState& s) { return dir->save(s); },
                          [&](const std::string& line) { progress.message(line); }};
  gates::RunResult result = gates::run_gates(std::move(state), start, executor, output);

  // Reports are written whatever the outcome, so CI always has its JUnit file.
  const fs::path reference = context->stored_baseline;
  const fs::path baseline_file =
      fs::exists(reference) ? reference : run_path / "baseline.json";
  if (auto written = report::generate_reports(run_path, baseline_file); !written) {
    progress.message("could not write the reports: " + written.error().format());
  }
  if (auto input = report::load_report_input(run_path, baseline_file)) {
    progress.run_finished(*input);
  } else {
    progress.message(gates::format_action(result.last));
  }
  return to_int(result.code);
}

int render(const RunRequest& request, const std::string& format, const std::string& out) {
  const fs::path dir = !request.run_dir.empty() ? fs::path(request.run_dir)
                                                : reports_root() / "latest";
  auto parsed = report::parse_report_format(format);
  if (!parsed) return fail({parsed.error()});
  auto input = report::load_report_input(dir, request.options.baseline.empty()
                                                  ? dir / "baseline.json"
                                                  : fs::path(request.options.baseline));
  if (!input) return fail({input.error()});
  const std::string text = report::render_report(*input, *parsed);
  if (out == "-") {
    std::cout << text;
    return 0;
  }
  const fs::path target = out.empty() ? dir / report::report_file_name(*parsed) : fs::path(out);
  if (auto w = write_file_atomically(target, text); !w) return fail({w.error()});
  std::cout << target.string() << "\n";
  return 0;
}

int status(const RunRequest& request) {
  fs::path dir = !request.run_dir.empty() ? fs::path(request.run_dir)
                                          : reports_root() / "latest";
  gates::StatusOutput out = gates::status_command(dir.string(), request.json);
  std::cout << out.text;
  if (!out.text.empty() && out.text.back() != '\n') std::cout << '\n';
  return to_int(out.code);
}

int plan(const RunRequest& request) {
  auto context = RunContext::create(request.options);
  if (!context) return fail(context.error());
  const fs::path run_path = reports_root() / "<run-id>";
  Errors errors;
  std::size_t index = 0;
  for (const gates::GateSpec& spec : context->catalog.specs) {
    ++index;
    auto gate_plan = context->plan(spec, run_path);
    if (!gate_plan) {
      errors.push_back(gate_plan.error());
      continue;
    }
    std::cout << fmt::format("== gate {}/{} {}: {}\n", index, context->catalog.specs.size(),
                             spec.id, spec.title)
              << gates::format_plan(*gate_plan);
    const fs::path attempt = run_path / fmt::format("{:02}-{}.1", index, spec.id);
    const auto placeholders =
        gate_placeholders(gate_plan->config, spec.id, attempt / "gate.toml", run_path);
    launch::PlanInputs inputs;
    inputs.trainer_argv = trainer_argv(gate_plan->config, context->trainer_binary, placeholders);
    inputs.log_dir = attempt;
    auto launch_plan = launch::plan_launch(gate_plan->config, inputs);
    if (!launch_plan) {
      errors.push_back(launch_plan.error());
      continue;
    }
    std::cout << launch::render_text(*launch_plan) << "\n";
  }
  if (!errors.empty()) return fail(errors);
  return 0;
}

void add_run_options(CLI::App& cmd, RunRequest& request) {
  add_config_options(cmd, request.options.common);
  cmd.add_option("--run-dir", request.options.run_dir,
                 "run directory (default: a new reports/<run-id>)");
  cmd.add_option("--baseline", request.options.baseline,
                 "stored baseline (default: baselines/<config name>-<devices>.json; without one "
                 "the first gate records it for this run)");
  cmd.add_option("--stages", request.options.stages, "gate definitions (default: ./stages)");
  cmd.add_flag("--ci", request.options.ci, "plain output for CI logs");
}

}  // namespace

void add_run_commands(CLI::App& app, int& exit_code) {
  auto request = std::make_shared<RunRequest>();

  CLI::App* all = app.add_subcommand(
      "run-all", "Run the gates in order; stop at the first failure with its diagnosis");
  add_run_options(*all, *request);
  all->add_option("--from", request->options.from, "first gate (id or number)");
  all->add_option("--until", request->options.until, "last gate (id or number)");
  all->callback([request, &exit_code] { exit_code = run(*request, RunMode::kAll); });

  CLI::App* one = app.add_subcommand(
      "run", "Run one gate in the latest run (its earlier gates must have passed)");
  one->add_option("gate", request->gate, "gate id or number (1-5)")->required();
  add_run_options(*one, *request);
  one->callback([request, &exit_code] { exit_code = run(*request, RunMode::kOne); });

  CLI::App* resume = app.add_subcommand(
      "resume", "Continue a run from its failed or interrupted gate; rerun stale passes");
  resume->add_option("run_dir", request->run_dir, "run directory (default: reports/latest)");
  add_run_options(*resume, *request);
  resume->callback([request, &exit_code] { exit_code = run(*request, RunMode::kResume); });

  CLI::App* status_cmd = app.add_subcommand("status", "Where a run stands, gate by gate");
  status_cmd->add_option("run_dir", request->run_dir, "run directory (default: reports/latest)");
  status_cmd->add_flag("--json", request->json, "print JSON");
  status_cmd->callback([request, &exit_code] { exit_code = status(*request); });

  auto format = std::make_shared<std::string>("html");
  auto out = std::make_shared<std::string>();
  CLI::App* report_cmd = app.add_subcommand(
      "report", "Regenerate a report of a run directory (also for a run killed mid-gate)");
  report_cmd->add_option("run_dir", request->run_dir, "run directory (default: reports/latest)");
  report_cmd->add_option("--format", *format, "html|md|json|junit");
  report_cmd->add_option("-o,--out", *out,
                         "file to write (default: the run directory's own; - for stdout)");
  report_cmd->add_option("--baseline", request->options.baseline,
                         "baseline to plot against (default: the run's baseline.json)");
  report_cmd->callback(
      [request, format, out, &exit_code] { exit_code = render(*request, *format, *out); });

  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Print every gate's effective configuration and the launch of every rank");
  add_run_options(*plan_cmd, *request);
  plan_cmd->callback([request, &exit_code] { exit_code = plan(*request); });
}

}  // namespace bigmac::cli
