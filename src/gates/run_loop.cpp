#include "gates/run_loop.h"

#include <fmt/format.h>

namespace bigmac::gates {
namespace {

Observation observe(const std::string& gate, GateOutcome outcome) {
  switch (outcome.kind) {
    case GateOutcome::Kind::kVerdict: {
      const GateVerdict& v = outcome.verdict;
      const CheckResult* failed = v.first_failure();
      const UnobservableFinding* blind = v.first_required_unobservable();
      return GateFinished{
          gate,         v.passed,
          v.summary(),  failed ? failed->name : blind ? blind->required.front() : std::string(),
          v.route_back, std::move(outcome.inputs)};
    }
    case GateOutcome::Kind::kInterrupted:
      return Interrupted{};
    case GateOutcome::Kind::kAborted:
      return GateAborted{gate, outcome.message};
  }
  return GateAborted{gate, "unknown outcome"};
}

}  // namespace

RunLoopResult run_gates(RunState state, const Observation& start, GateExecutor& executor,
                        const RunOutput& output) {
  Observation next = start;
  for (;;) {
    Decision d = decide(state, next);
    state = std::move(d.state);
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
    GateOutcome outcome = executor.execute(launch->gate, g ? g->attempts : 1);
    if (outcome.kind == GateOutcome::Kind::kVerdict) {
      (output.detail ? output.detail : output.print)(format_verdict(outcome.verdict));
    }
    next = observe(launch->gate, std::move(outcome));
  }
}

}  // namespace bigmac::gates
