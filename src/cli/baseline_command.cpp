#include "cli/baseline_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "baseline/baseline_commands.h"
#include "cli/run_options.h"
#include "gates/gate_plan.h"
#include "report/attempt_logs.h"
#include "run/run_directory.h"

namespace bigmac::cli {
namespace fs = std::filesystem;
using attempt::reports_root;
namespace {

struct BaselineRequest {
  RunCommandOptions options;
  std::string run_dir;
  std::string out;
  std::string file_a;
  std::string file_b;
  std::vector<std::string> logs;
  std::string gate;
};

int print(const baseline::CommandResult& result) {
  std::cout << result.text;
  if (!result.text.empty() && result.text.back() != '\n') std::cout << '\n';
  return to_int(result.code);
}

int fail(const Errors& errors) {
  print_errors(std::cerr, errors);
  return to_int(exit_code_for(errors));
}

/// Promotes the first gate of a run to a stored baseline.
int record(const BaselineRequest& request) {
  const fs::path run_dir =
      request.run_dir.empty() ? reports_root() / "latest" : fs::path(request.run_dir);
  // Without -c/--set, the configuration the run was started with: its logs are read as it says.
  auto invocation = with_recorded_invocation(request.options, run_dir);
  if (!invocation) return fail({invocation.error()});
  RunCommandOptions options = request.options;
  options.common = invocation->options.common;
  auto context = make_run_context(options);
  if (!context) return fail(context.error());
  auto state = run::read_run_state(run_dir);
  if (!state) return fail({state.error()});
  if (state->gates.empty()) return fail({make_error(ErrorKind::kInput, "the run has no gates")});
  const run::GateRecord& first = state->gates.front();
  if (first.status != run::GateStatus::kPassed) {
    return print({ExitCode::kGateFailed,
                  fmt::format("refusing to record a baseline: gate {} is {} in {}, not passed",
                              first.id, run::status_name(first.status), run_dir.string())});
  }
  const fs::path attempt = run_dir / run::attempt_folder(0, first.id, first.attempts);
  std::error_code ec;
  if (!fs::is_directory(attempt, ec)) {
    return fail({make_error(ErrorKind::kInput, "cannot read " + attempt.string())});
  }
  auto ranks = report::read_attempt_logs(attempt, context->parser);
  if (!ranks) return fail({ranks.error()});
  std::vector<logs::Record> records;
  for (const logs::RankLog& rank : *ranks) {
    std::vector<logs::Record> typed = rank.typed_records();
    records.insert(records.end(), std::make_move_iterator(typed.begin()),
                   std::make_move_iterator(typed.end()));
  }
  const fs::path out = request.out.empty() ? context->stored_baseline : fs::path(request.out);
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path(), ec);
  // The same digest a run records for its own baseline: what the first gate read.
  auto reference = context->load_reference(run_dir, first.id);
  if (!reference) return fail({reference.error()});
  auto plan = gates::plan_gate(context->catalog.specs.front(), context->config,
                               *reference ? (*reference)->samples_per_step() : std::nullopt);
  baseline::Recorded recorded;
  if (plan) {
    recorded = context->recorded(*plan);
  } else {
    recorded.commit = baseline::ci_commit();
  }
  return print(baseline::record_baseline(records, true, out, context->baseline_name,
                                         plan ? plan->inputs_digest : context->config_digest,
                                         recorded));
}

int compare(const BaselineRequest& request) {
  std::vector<fs::path> logs(request.logs.begin(), request.logs.end());
  baseline::ComparisonPolicy policy;
  auto parser = log_parser_options(request.options.common);
  if (!parser) return fail(parser.error());
  if (!request.gate.empty()) {
    auto context = make_run_context(request.options);
    if (!context) return fail(context.error());
    const gates::GateSpec* spec = context->catalog.find(request.gate);
    if (!spec) {
      const auto ids = context->catalog.ids();
      return fail({make_error(ErrorKind::kUsage, "unknown gate " + request.gate,
                              fmt::format("one of {} or 1-{}", fmt::join(ids, ", "), ids.size()))});
    }
    policy = gates::comparison_policy(*spec);
  }
  return print(baseline::compare_logs(logs, request.file_a, policy, *parser));
}

}  // namespace

void add_baseline_commands(CLI::App& app, int& exit_code) {
  auto request = std::make_shared<BaselineRequest>();
  CLI::App* baseline = app.add_subcommand("baseline", "Record, show or diff stored baselines");
  baseline->require_subcommand(1);

  CLI::App* rec = baseline->add_subcommand(
      "record", "Store the passed first gate of a run as baselines/<config>-<devices>.json");
  rec->add_option("run_dir", request->run_dir, "run directory (default: reports/latest)");
  rec->add_option("-o,--out", request->out, "baseline file to write");
  add_config_options(*rec, request->options.common);
  rec->callback([request, &exit_code] { exit_code = record(*request); });

  CLI::App* show = baseline->add_subcommand("show", "Print a baseline file");
  show->add_option("file", request->file_a, "baseline JSON")->required();
  show->callback(
      [request, &exit_code] { exit_code = print(baseline::show_baseline(request->file_a)); });

  CLI::App* diff = baseline->add_subcommand(
      "diff", "Per metric: first divergent step and largest relative difference");
  diff->add_option("a", request->file_a, "first baseline")->required();
  diff->add_option("b", request->file_b, "second baseline")->required();
  diff->callback([request, &exit_code] {
    exit_code = print(baseline::diff_baseline_files(request->file_a, request->file_b));
  });

  CLI::App* cmp = app.add_subcommand(
      "compare", "Compare logs you produced with a baseline: match, drift or regression");
  cmp->add_option("logs", request->logs, "rank log files")->required();
  cmp->add_option("--baseline", request->file_a, "baseline JSON")->required();
  cmp->add_option("--gate", request->gate, "use this gate's tolerances (id or number)");
  add_config_options(*cmp, request->options.common);
  cmp->callback([request, &exit_code] { exit_code = compare(*request); });
}

}  // namespace bigmac::cli
