#include "run/run_status.h"

#include <fmt/format.h>

#include "core/json_file.h"
#include "run/run_directory.h"

namespace bigmac::run {

std::string format_status(const RunState& s, const std::string& run_dir,
                          std::optional<long> holder) {
  const RunPhase phase = s.phase();
  const bool orphaned = phase == RunPhase::kRunning && !holder;
  std::string out =
      fmt::format("run {}: {}", s.run_id, orphaned ? "stopped mid-gate" : phase_name(phase));
  if (orphaned) {
    out += " — no bigmac-bringup holds this run: the orchestrator was killed while " +
           (s.current.empty() ? std::string("a gate ran") : "gate " + s.current + " ran");
  } else if (phase == RunPhase::kRunning) {
    out += fmt::format(" — bigmac-bringup (pid {}) is running it", *holder);
  } else if (!s.message.empty()) {
    out += " — " + s.message;
  }
  out += "\n";
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    const GateRecord& g = s.gates[i];
    const bool selected = i >= s.first && i <= s.last;
    out += fmt::format("  {} {:<8} {:<14} {:>2} attempt{} {}", i + 1, g.id, status_name(g.status),
                       g.attempts, g.attempts == 1 ? " " : "s", selected ? "" : "(not selected) ");
    if (g.status == GateStatus::kFailed && !g.failed_check.empty()) {
      out += fmt::format("{} failed; route back: {}", g.failed_check, g.route_back);
    } else {
      out += g.note;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  // The first selected gate that has not passed: where resume continues.
  std::string next_gate;
  for (std::size_t i = s.first; i <= s.last && i < s.gates.size(); ++i) {
    if (s.gates[i].status != GateStatus::kPassed &&
        s.gates[i].status != GateStatus::kNotApplicable) {
      next_gate = s.gates[i].id;
      break;
    }
  }
  switch (phase) {
    case RunPhase::kReady:
      out += fmt::format("next: bigmac-bringup resume {}  (runs the selected gates from {})\n",
                         run_dir, next_gate.empty() ? "the first" : next_gate);
      break;
    case RunPhase::kRunning:
      if (orphaned) {
        out += fmt::format("next: bigmac-bringup resume {}  (reruns {})\n", run_dir, s.current);
      }
      break;
    case RunPhase::kPassed:
      out += "next: nothing to do; every selected gate passed or does not apply\n";
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
  const std::optional<long> holder = lock_holder(run_dir);
  if (json) {
    nlohmann::json j = status_json(*state);
    j["held_by_pid"] = holder ? nlohmann::json(*holder) : nlohmann::json(nullptr);
    if (state->phase() == RunPhase::kRunning && !holder) j["phase"] = "stopped-mid-gate";
    return StatusOutput{ExitCode::kOk, json_text(j, 2) + "\n"};
  }
  return StatusOutput{ExitCode::kOk, format_status(*state, run_dir, holder)};
}

}  // namespace bigmac::run
