#include "launch/rank_ending.h"

#include <fmt/format.h>

#include "proc/signal_name.h"

namespace bigmac::launch {

std::string RankEnding::describe() const {
  if (!known) return "exit unknown";
  if (stalled) return detail.empty() ? "stalled" : "stalled (" + detail + ")";
  if (bounded) return "stopped at the step bound";
  if (!signal.empty()) return "killed by " + signal;
  if (exit_code) return fmt::format("exit {}", *exit_code);
  return "still running";
}

RankEnding ending_of(const RankOutcome& outcome, const RunResult& result) {
  RankEnding exit;
  exit.rank = outcome.rank;
  exit.known = outcome.exit.has_value();
  if (outcome.exit) {
    if (outcome.exit->signal != 0) {
      exit.signal = proc::signal_name(outcome.exit->signal);
    } else {
      exit.exit_code = outcome.exit->exit_code;
    }
  }
  // The first stall is the rank that went silent first; the others waited for it.
  for (const Stall& stall : result.stalls) {
    if (stall.rank != outcome.rank) continue;
    exit.stalled = &stall == &result.stalls.front();
    exit.detail = exit.stalled
                      ? stall.describe()
                      : fmt::format("stopped by the orchestrator after rank {} stalled: {}",
                                    result.stalls.front().rank, stall.describe());
  }
  if (outcome.stopped_by_us && result.status == RunStatus::kNonFinite) {
    exit.stopped_at_non_finite = true;
    exit.detail = "stopped by the orchestrator: " + result.non_finite->describe();
  } else if (outcome.stopped_by_us && result.status == RunStatus::kStoppedEarly) {
    exit.detail = "stopped by the orchestrator: " + result.stop_reason;
  } else if (outcome.stopped_by_us && result.status == RunStatus::kBounded) {
    exit.bounded = true;
    exit.detail = fmt::format(
        "stopped by the orchestrator at the step bound: step {} was logged, "
        "past the gate's steps",
        result.bound_step.value_or(0));
  } else if (exit.detail.empty() && outcome.stopped_by_us) {
    exit.detail = "stopped by the orchestrator after another rank failed";
  }
  exit.stopped = outcome.stopped_by_us;
  exit.node = outcome.node;
  exit.node_failed = outcome.node_failed;
  if (outcome.exit && !outcome.exit->success() && !outcome.stopped_by_us) {
    exit.error_lines = outcome.error_lines;
  }
  exit.first_error_line = outcome.first_error_line;
  if (outcome.duration) exit.duration_s = seconds_of(*outcome.duration);
  return exit;
}

}  // namespace bigmac::launch
