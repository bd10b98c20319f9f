#include "run/run_loop.h"

namespace bigmac::run {

RunLoopResult run_gates(RunState state, const Observation& start, GateExecutor& executor,
                        const RunOutput& output) {
  Observation next = start;
  for (;;) {
    Decision d = decide(state, next);
    state = std::move(d.state);
    state.history.insert(state.history.end(), d.log.begin(), d.log.end());
    for (const std::string& line : d.log) {
      // A transition line reads "pp2: pending -> not applicable (why)" (run_transition.cpp).
      const bool lasting =
          line.find("-> " + std::string(status_name(GateStatus::kNotApplicable))) !=
              std::string::npos ||
          line.find("-> " + std::string(status_name(GateStatus::kInvalidated))) !=
              std::string::npos;
      (lasting || !output.detail ? output.print : output.detail)(line);
    }
    // Saved before acting: a SIGKILL during the gate leaves it `running`, which resume reruns.
    if (auto saved = output.persist(state); !saved) {
      output.print("cannot save the run state: " + saved.error().format());
      StopWithError stop{state.current, saved.error().format()};
      return RunLoopResult{std::move(state), std::move(stop), ExitCode::kInfrastructure};
    }
    const auto* launch = std::get_if<LaunchGate>(&d.action);
    if (!launch) {
      if (std::holds_alternative<Continue>(d.action)) {
        return RunLoopResult{std::move(state), d.action, ExitCode::kOk};
      }
      const ExitCode code = exit_code_of(d.action);
      return RunLoopResult{std::move(state), std::move(d.action), code};
    }
    const GateRecord* g = state.find(launch->gate);
    next = executor.execute(launch->gate, g ? g->attempts : 1);
  }
}

}  // namespace bigmac::run
