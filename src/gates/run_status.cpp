#include "gates/run_status.h"

#include <fmt/format.h>

#include "gates/run_directory.h"

namespace bigmac::gates {

std::string format_status(const RunState& s, const std::string& run_dir) {
  std::string out = fmt::format("run {}: {}", s.run_id, phase_name(s.phase));
  if (!s.message.empty()) out += " — " + s.message;
  out += "\n";
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    const GateRecord& g = s.gates[i];
    const bool selected = i >= s.first && i <= s.last;
    out += fmt::format("  {} {:<8} {:<12} {:>2} attempt{} {}", i + 1, g.id, status_name(g.status),
                       g.attempts, g.attempts == 1 ? " " : "s", selected ? "" : "(not selected) ");
    if (g.status == GateStatus::kFailed && !g.failed_check.empty()) {
      out += fmt::format("{} failed; route back: {}", g.failed_check, g.route_back);
    } else {
      out += g.note;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  switch (s.phase) {
    case RunPhase::kReady:
    case RunPhase::kRunning:
      break;
    case RunPhase::kPassed:
      out += "next: nothing to do; every selected gate passed\n";
      break;
    case RunPhase::kFailed:
    case RunPhase::kInterrupted:
    case RunPhase::kInfrastructure:
      out += fmt::format("next: bigmac-bringup resume {}  (continues at {})\n", run_dir, s.current);
      break;
  }
  return out;
}

nlohmann::json status_json(const RunState& state) {
  nlohmann::json j = to_json(state);
  for (auto& g : j["gates"]) g.erase("inputs");
  return j;
}

std::string format_action(const Action& action) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, LaunchGate>) {
          return "launching gate " + a.gate;
        } else if constexpr (std::is_same_v<T, StopWithFailure>) {
          return fmt::format("gate {} failed at check {}; route back to gate {}", a.gate, a.check,
                             a.route_back);
        } else if constexpr (std::is_same_v<T, StopInterrupted>) {
          return a.gate.empty()
                     ? "interrupted; resume continues"
                     : fmt::format("interrupted during gate {}; resume continues there", a.gate);
        } else if constexpr (std::is_same_v<T, StopWithError>) {
          return fmt::format("gate {} could not run: {}", a.gate, a.message);
        } else if constexpr (std::is_same_v<T, Refuse>) {
          return a.message;
        } else if constexpr (std::is_same_v<T, Finish>) {
          return a.summary;
        } else {
          return "nothing to do";
        }
      },
      action);
}

StatusOutput status_command(const std::string& run_dir, bool json) {
  auto state = read_run_state(run_dir);
  if (!state) return StatusOutput{exit_code_for(state.error().kind), state.error().format() + "\n"};
  if (json) return StatusOutput{ExitCode::kOk, status_json(*state).dump(2) + "\n"};
  return StatusOutput{ExitCode::kOk, format_status(*state, run_dir)};
}

}  // namespace bigmac::gates
