#pragma once

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "attempt/run_context.h"
#include "core/error.h"
#include "core/exit_code.h"
#include "report/progress.h"

namespace bigmac::run {

/// Which gates a run command asked for.
enum class RunMode {
  kAll,     ///< run-all [--from A] [--until B]: a new run
  kOne,     ///< run GATE: one gate of the latest run
  kResume,  ///< resume: the run's stored selection, from its failed or interrupted gate
};

/// The directory a run command works in: `given` when not empty; else, for `run GATE` and
/// `resume`, reports/latest resolved; else a new reports/<run-id> (a suffix when the second is
/// taken).
std::filesystem::path choose_run_dir(const std::filesystem::path& given, RunMode mode);

/// Goes to `cwd`, where the run started: its configuration and its trainer command name files
/// relative to it. Returns the line to print when it had to change directory ("" when already
/// there); an input error when `cwd` cannot be entered.
Expected<std::string> enter_start_directory(const std::filesystem::path& cwd);

/// One run command, as its command line resolved it.
struct Session {
  RunMode mode = RunMode::kAll;
  std::filesystem::path run_dir;  ///< absolute
  /// The gates asked for (ids): `run GATE`'s twice, or run-all's --from and --until (empty:
  /// from the first / to the last). Their order was checked (selection_out_of_order).
  std::string first;
  std::string last;
  nlohmann::json invocation;  ///< recorded as the run's invocation.json
  std::string report_shown;   ///< run_dir/report.html as the user would type it where they are
};

/// How a session ended: the exit code and, when the run refused the request (an earlier gate
/// not passed, no gate of the selection applies), why: the answer to the request, said last.
struct SessionEnd {
  ExitCode code = ExitCode::kOk;
  std::string refused;
};

/// A run command from its checks to its reports: what must hold before anything is created
/// (the diagnoses route back to gates that exist; a resume has a state to resume), the run
/// directory opened (its lock) and its state loaded or made, disk room held for the state and
/// the reports, reports/latest pointed at it, the invocation recorded, the loop over gate
/// attempts (run_gates with attempt::AttemptExecutor), then the reports written whatever the
/// outcome (CI always has its JUnit file) and the final block printed through `progress`.
/// An error returned means nothing was launched.
tl::expected<SessionEnd, Errors> run_session(const Session& session,
                                             const attempt::RunContext& context,
                                             report::Progress& progress,
                                             const std::atomic<bool>& cancel);

}  // namespace bigmac::run
