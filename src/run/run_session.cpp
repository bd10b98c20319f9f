#include "run/run_session.h"

#include <fmt/format.h>

#include <ctime>

#include "attempt/gate_attempt.h"
#include "core/atomic_file.h"
#include "core/disk_reserve.h"
#include "core/json_file.h"
#include "diagnose/catalog.h"
#include "diagnose/diagnoser.h"
#include "gates/gate_applicability.h"
#include "report/report_files.h"
#include "report/report_input.h"
#include "run/run_directory.h"
#include "run/run_loop.h"
#include "run/run_status.h"

namespace bigmac::run {
namespace fs = std::filesystem;
namespace {

/// Held back on the run directory's disk for the state, the verdicts and the reports.
constexpr std::uint64_t kDiskReserveBytes = 8ull << 20;

tl::unexpected<Errors> failure(Error e) { return tl::unexpected(Errors{std::move(e)}); }

/// The observation the loop starts from: begin the selection, or resume the stored one.
Observation start_of(const Session& session, const std::map<std::string, gates::GateInputs>& inputs,
                     const std::map<std::string, std::string>& not_applicable) {
  if (session.mode == RunMode::kResume) return Resume{inputs, not_applicable};
  return Begin{session.first, session.last, inputs, not_applicable};
}

}  // namespace

fs::path choose_run_dir(const fs::path& given, RunMode mode) {
  if (!given.empty()) return given;
  const fs::path root = attempt::reports_root();
  if (mode != RunMode::kAll && fs::exists(root / "latest")) return fs::canonical(root / "latest");
  fs::path dir = root / make_run_id(std::time(nullptr));
  for (int suffix = 1; fs::exists(dir); ++suffix) {
    dir = root / make_run_id(std::time(nullptr), suffix);
  }
  return dir;
}

Expected<std::string> enter_start_directory(const fs::path& cwd) {
  std::error_code ec;
  if (cwd == fs::current_path(ec)) return std::string();
  fs::current_path(cwd, ec);
  if (ec) {
    return tl::unexpected(
        make_error(ErrorKind::kInput,
                   fmt::format("the run started in {}, which cannot be entered: {}", cwd.string(),
                               ec.message()),
                   "give the configuration again with -c from here"));
  }
  return "continuing in " + cwd.string() + ", where the run started";
}

tl::expected<SessionEnd, Errors> run_session(const Session& session,
                                             const attempt::RunContext& context,
                                             report::Progress& progress,
                                             const std::atomic<bool>& cancel) {
  const fs::path& run_path = session.run_dir;
  // The diagnoses route back to gates of the gate files, checked before anything is created.
  auto catalog = diagnose::builtin_catalog();
  if (!catalog) return failure(catalog.error());
  if (Errors e = diagnose::unknown_gates(*catalog, context.catalog.ids()); !e.empty()) {
    return tl::unexpected(std::move(e));
  }
  if (session.mode == RunMode::kResume && !fs::exists(run_path / "state.json")) {
    return failure(make_error(
        ErrorKind::kInput, fmt::format("no run to resume in {} (no state.json)", run_path.string()),
        "start one with run-all"));
  }
  auto inputs = context.inputs(run_path);
  if (!inputs) return tl::unexpected(inputs.error());
  auto diagnoser = diagnose::Diagnoser::create(std::move(*catalog));
  if (!diagnoser) return failure(diagnoser.error());

  auto dir = RunDirectory::open(run_path);
  if (!dir) return failure(dir.error());
  auto stored = dir->load();
  if (!stored) return failure(stored.error());
  // Room to save the state and write the reports if the gate fills the disk.
  auto reserve = DiskReserve::hold(run_path / ".disk-reserve", kDiskReserveBytes);
  if (!reserve) {
    progress.message("warning: " + reserve.error().format() +
                     "; a disk filled during the run may leave its state unsaved");
  }
  RunState state =
      stored->value_or(RunState::fresh(run_path.filename().string(), context.catalog.ids()));
  if (auto latest = point_latest(run_path.parent_path(), run_path); !latest) {
    progress.message("warning: " + latest.error().format());
  }
  if (auto w = write_file_atomically(run_path / kInvocationFile,
                                     json_text(session.invocation, 2) + "\n");
      !w) {
    return failure(w.error());
  }

  const Observation start =
      start_of(session, *inputs, gates::not_applicable_gates(context.catalog, context.config));
  progress.detail(fmt::format("run directory: {}", run_path.string()));
  progress.run_started(state.run_id, state.gates.size());
  attempt::AttemptExecutor executor(context, run_path,
                                    attempt::host_services(cancel, progress, *diagnoser));
  const RunOutput output{[&](const RunState& s) { return dir->save(s); },
                         [&](const std::string& line) { progress.message(line); },
                         [&](const std::string& line) { progress.detail(line); }};
  const RunLoopResult result = run_gates(std::move(state), start, executor, output);

  // Reports are written whatever the outcome, so CI always has its JUnit file.
  const fs::path& reference = context.stored_baseline;
  const fs::path baseline_file =
      !reference.empty() && fs::exists(reference) ? reference : run_path / "baseline.json";
  std::string report_path;
  if (auto written = report::generate_reports(run_path, baseline_file, context.parser); !written) {
    progress.message("could not write the reports: " + written.error().format());
  } else {
    report_path = session.report_shown;
  }
  if (auto input = report::load_report_input(run_path, baseline_file, context.parser)) {
    progress.run_finished(*input, report_path);
  } else {
    progress.message(format_action(result.last));
  }
  SessionEnd end{result.code, {}};
  if (const auto* refused = std::get_if<Refuse>(&result.last)) end.refused = refused->message;
  return end;
}

}  // namespace bigmac::run
