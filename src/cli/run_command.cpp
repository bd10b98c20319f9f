#include "cli/run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "attempt/attempt_plan.h"
#include "cli/interrupt_flag.h"
#include "cli/run_options.h"
#include "core/atomic_file.h"
#include "core/edit_distance.h"
#include "core/json_file.h"
#include "core/printable.h"
#include "gates/gate_applicability.h"
#include "launch/clock.h"
#include "launch/launch_plan.h"
#include "report/line_printer.h"
#include "report/progress.h"
#include "report/report_files.h"
#include "report/report_input.h"
#include "run/run_session.h"
#include "run/run_status.h"
#include "run/run_transition.h"

namespace bigmac::cli {
namespace fs = std::filesystem;
using attempt::reports_root;
namespace {

using run::RunMode;

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

/// Resolves a gate named by id or number to its id; nullopt (with the message printed) when
/// the catalog has no such gate. Empty stays empty (= from the first / to the last).
std::optional<std::string> resolve_gate(const gates::GateCatalog& catalog, const std::string& name,
                                        const char* option) {
  if (name.empty()) return std::string();
  if (const gates::GateSpec* spec = catalog.find(name)) return spec->id;
  const auto ids = catalog.ids();
  const std::vector<std::string_view> views(ids.begin(), ids.end());
  const auto near = closest_match(name, views);
  print_errors(std::cerr,
               {make_error(ErrorKind::kUsage,
                           fmt::format("{}: unknown gate '{}'{}", option, name,
                                       near ? fmt::format(" (did you mean '{}'?)", *near) : ""),
                           fmt::format("one of {} or 1-{}", fmt::join(ids, ", "), ids.size()))});
  return std::nullopt;
}

/// Prints which effective values differ from the configuration the run recorded, so a resume
/// that changes the layout (or drops a fault) says so before any gate runs.
void say_what_changed(const RunCommandOptions& recorded, const config::Config& now, RunMode mode) {
  const char* command = mode == RunMode::kResume ? "resume" : "run";
  auto before = load_config(recorded.common);
  if (!before) {
    std::cout << fmt::format(
        "bigmac-bringup: the configuration this run recorded no longer loads ({}); {} uses the "
        "one given now\n",
        before.error().front().format(), command);
    return;
  }
  const std::vector<std::string> changes = config_changes(*before, now);
  if (changes.empty()) return;
  std::cout << fmt::format("bigmac-bringup: {} changes {} value{} of the run's configuration:\n",
                           command, changes.size(), changes.size() == 1 ? "" : "s");
  for (const std::string& line : changes) std::cout << "  " << printable(line) << "\n";
}

/// How the run prints: -q/-v, --color (and NO_COLOR, TERM) and the resume command as the user
/// would paste it here.
report::OutputStyle output_style(const RunCommandOptions& options, const fs::path& user_cwd,
                                 const fs::path& run_path, bool terminal) {
  report::OutputStyle style;
  style.verbosity = options.quiet     ? report::Verbosity::kQuiet
                    : options.verbose ? report::Verbosity::kVerbose
                                      : report::Verbosity::kNormal;
  const auto choice =
      report::parse_color_choice(options.color).value_or(report::ColorChoice::kAuto);
  style.color = report::use_color(choice, terminal, std::getenv("NO_COLOR"), std::getenv("TERM"));
  style.resume_command = fmt::format("{} resume {}", invoked_program(user_cwd),
                                     launch::quote_for_display(shorter_path(run_path, user_cwd)));
  return style;
}

int run(const RunRequest& request, RunMode mode) {
  const fs::path run_path = fs::absolute(run::choose_run_dir(
      !request.run_dir.empty() ? request.run_dir : request.options.run_dir, mode));
  // Where the user typed the command: printed paths are relative to it.
  const fs::path user_cwd = fs::current_path();
  auto invocation =
      mode == RunMode::kAll
          ? Expected<Invocation>(Invocation{request.options, fs::current_path(), std::nullopt})
          : with_recorded_invocation(request.options, run_path);
  if (!invocation) return fail({invocation.error()});
  auto entered = run::enter_start_directory(invocation->cwd);
  if (!entered) return fail({entered.error()});
  if (!entered->empty()) std::cerr << "bigmac-bringup: " << *entered << "\n";
  const RunCommandOptions& options = invocation->options;
  auto context = make_run_context(options);
  if (!context) return fail(context.error());
  if (invocation->recorded) say_what_changed(*invocation->recorded, context->config, mode);
  // Every named gate is checked before the run directory is created or touched.
  const auto gate = resolve_gate(context->catalog, request.gate, "run");
  const auto from = resolve_gate(context->catalog, request.options.from, "--from");
  const auto until = resolve_gate(context->catalog, request.options.until, "--until");
  if (!gate || !from || !until) return to_int(ExitCode::kBadInput);
  if (auto why = run::selection_out_of_order(context->catalog.ids(), *from, *until)) {
    return fail({make_error(ErrorKind::kUsage, *why, "give --from a gate at or before --until")});
  }
  run::Session session;
  session.mode = mode;
  session.run_dir = run_path;
  session.first = mode == RunMode::kOne ? *gate : *from;
  session.last = mode == RunMode::kOne ? *gate : *until;
  session.invocation = invocation_record(options);
  session.report_shown = shorter_path(run_path / "report.html", user_cwd);

  report::LinePrinter printer = report::LinePrinter::for_stdout(request.options.ci);
  const report::OutputStyle style =
      output_style(request.options, user_cwd, run_path, isatty(STDOUT_FILENO) != 0);
  report::TerminalProgress progress(
      printer,
      [] { return launch::seconds_of(std::chrono::steady_clock::now().time_since_epoch()); },
      style);
  auto end = run::run_session(session, *context, progress, install_interrupt_flag());
  if (!end) return fail(end.error());
  // A refusal (an earlier gate not passed) is the answer to the request: say it last.
  if (!end->refused.empty()) print_errors(std::cerr, {make_error(ErrorKind::kUsage, end->refused)});
  return to_int(end->code);
}

int render(const RunRequest& request, const std::string& format, const std::string& out) {
  const fs::path dir =
      !request.run_dir.empty() ? fs::path(request.run_dir) : reports_root() / "latest";
  auto parsed = report::parse_report_format(format);
  if (!parsed) return fail({parsed.error()});
  // Logs the run left without records are read as the run's configuration says.
  auto invocation = with_recorded_invocation(request.options, dir);
  if (!invocation) return fail({invocation.error()});
  auto parser = log_parser_options(invocation->options.common);
  if (!parser) return fail(parser.error());
  auto input = report::load_report_input(
      dir,
      request.options.baseline.empty() ? dir / "baseline.json" : fs::path(request.options.baseline),
      *parser);
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
  fs::path dir = !request.run_dir.empty() ? fs::path(request.run_dir) : reports_root() / "latest";
  run::StatusOutput out = run::status_command(dir.string(), request.json);
  // The next-step line names the program as the user can type it here.
  const std::string next = "next: bigmac-bringup ";
  if (const auto at = out.text.find(next); at != std::string::npos && !request.json) {
    out.text.replace(at, next.size(), "next: " + invoked_program(fs::current_path()) + " ");
  }
  std::cout << out.text;
  if (!out.text.empty() && out.text.back() != '\n') std::cout << '\n';
  return to_int(out.code);
}

int plan(const RunRequest& request) {
  auto context = make_run_context(request.options);
  if (!context) return fail(context.error());
  const fs::path run_path = reports_root() / "<run-id>";
  Errors errors;
  nlohmann::json gates_json = nlohmann::json::array();
  std::string text;
  std::size_t number = 0;
  for (const gates::GateSpec& spec : context->catalog.specs) {
    ++number;
    if (auto why = gates::not_applicable_reason(spec, context->config)) {
      text += fmt::format("== gate {}/{} {}: not applicable: {}\n\n", number,
                          context->catalog.specs.size(), spec.id, *why);
      gates_json.push_back({{"gate", spec.id},
                            {"number", number},
                            {"title", spec.title},
                            {"applicable", false},
                            {"reason", *why}});
      continue;
    }
    auto reference = context->load_reference(run_path, spec.id);
    if (!reference) return fail({reference.error()});
    // The same planning code as a run; devices are not probed for a printout.
    auto planned =
        attempt::plan_attempt(*context, spec, *reference ? &**reference : nullptr, run_path, 1, {});
    if (!planned) {
      errors.push_back(planned.error());
      continue;
    }
    text += attempt::format_attempt_plan(*planned, request.options.verbose);
    gates_json.push_back(attempt::attempt_plan_json(*planned));
  }
  if (!errors.empty()) return fail(errors);
  if (request.json) {
    std::cout << json_text(nlohmann::json{{"gates", gates_json}}, 2) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

/// -c, --set, --baseline, --no-baseline and --stages: what a run and its plan read.
void add_input_options(CLI::App& cmd, RunRequest& request) {
  add_config_options(cmd, request.options.common);
  cmd.add_option("--baseline", request.options.baseline,
                 "stored baseline to compare with; it must exist (default: "
                 "baselines/<config name>-<devices>.json when it exists, else the first gate "
                 "records this run's own)")
      ->option_text("FILE");
  cmd.add_flag("--no-baseline", request.options.no_baseline,
               "ignore any stored baseline: the first gate records this run's own");
  cmd.add_option("--stages", request.options.stages,
                 "gate definitions (default: ./stages, else the installed ones)")
      ->option_text("DIR");
}

void add_run_options(CLI::App& cmd, RunRequest& request) {
  add_input_options(cmd, request);
  cmd.add_option("--run-dir", request.options.run_dir,
                 "run directory (default: a new reports/<run-id>)")
      ->check(named_value("a run directory"))
      ->option_text("DIR");
  cmd.add_flag("--ci", request.options.ci, "plain output for CI logs");
  cmd.add_flag("-q,--quiet", request.options.quiet, "print the verdict alone");
  cmd.add_flag("-v,--verbose", request.options.verbose,
               "also print every check, state change and step milestone");
  cmd.add_option("--color", request.options.color,
                 "colour the status words: auto (a terminal, unless NO_COLOR is set), always, "
                 "never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("WHEN");
  cmd.add_flag("--strict", request.options.strict,
               "every check the trainer's logs cannot answer (unobservable) fails its gate, not "
               "only the gate's required_checks");
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
  one->add_option("gate", request->gate, "gate id or number (1-5)")
      ->required()
      ->check(named_value("a gate id or number"));
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
      "plan", "Print every gate's effective configuration and launch, without running anything");
  add_input_options(*plan_cmd, *request);
  plan_cmd->add_flag("-v,--verbose", request->options.verbose,
                     "every rank's argv, environment and files");
  plan_cmd->add_flag("--json", request->json, "print JSON");
  plan_cmd->callback([request, &exit_code] { exit_code = plan(*request); });
}

}  // namespace bigmac::cli
