#include "launch/run_result.h"

#include <fmt/format.h>

namespace bigmac::launch {

std::string_view run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kStalled:
      return "stalled";
    case RunStatus::kNonFinite:
      return "non-finite loss";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kLaunchFailed:
      return "launch failed";
    case RunStatus::kStoppedEarly:
      return "stopped early";
    case RunStatus::kBounded:
      return "stopped at the step bound";
  }
  return "?";
}

std::string ProcessFailure::describe() const {
  std::string out =
      fmt::format("rank {}{} (pid {}) {} after {:.1f} s", rank, node.empty() ? "" : " on " + node,
                  pid, status.describe(), seconds_of(at));
  if (!first_error_line.empty()) out += ": " + first_error_line;
  return out;
}

std::string RunResult::summary() const {
  std::string out =
      fmt::format("launch {} after {:.1f} s", run_status_name(status), seconds_of(duration));
  if (launch_error) out += "\n  " + launch_error->format();
  if (root_cause) out += "\n  root cause: " + root_cause->describe();
  for (std::size_t i = 1; i < failures.size(); ++i) out += "\n  then: " + failures[i].describe();
  for (const std::string& line : node_failure_lines) out += "\n  node failure: " + line;
  for (const Stall& s : stalls) out += "\n  " + s.describe();
  for (const std::string& place : interrupted_at) out += "\n  interrupted: " + place;
  if (non_finite) out += "\n  " + non_finite->describe();
  if (!stop_reason.empty()) out += "\n  " + stop_reason;
  for (const std::string& p : cleanup_problems) out += "\n  cleanup: " + p;
  return out;
}

}  // namespace bigmac::launch
