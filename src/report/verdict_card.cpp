#include "report/verdict_card.h"

#include <fmt/format.h>

#include "launch/launch_plan.h"
#include "report/diagnosis_text.h"

namespace bigmac::report {
namespace {

std::string resume_command(const ReportInput& input) {
  return "bigmac-bringup resume " + launch::quote_for_display(input.run_dir);
}

VerdictCard failed_gate_card(const ReportInput& input, const GateReport& gate) {
  VerdictCard card;
  card.failed = true;
  card.gate_index = gate.index;
  card.gate = gate.record.id;
  const gates::CheckResult* failed = gate.verdict ? gate.verdict->first_failure() : nullptr;
  card.check = failed ? failed->name : gate.record.failed_check;
  card.check_message = failed ? failed->message : gate.record.note;
  const gates::UnobservableFinding* blind =
      gate.verdict && !failed ? gate.verdict->first_required_unobservable() : nullptr;
  if (blind) {
    card.check = blind->required.front();
    card.check_message = blind->text();
  }
  const std::string regression = regression_headline(gate);
  card.headline = fmt::format("gate {} {} failed{}{}", gate.index + 1, gate.record.id,
                              card.check.empty() && regression.empty() ? "" : ": ",
                              regression.empty() ? card.check : regression);
  const std::string route_back = gate.verdict && !gate.verdict->route_back.empty()
                                     ? gate.verdict->route_back
                                     : gate.record.route_back;
  if (!gate.diagnoses.empty()) {
    const diagnose::Diagnosis& d = gate.diagnoses.front();
    card.diagnosis = d.id;
    card.symptom = d.symptom;
    card.cause = d.cause;
    card.fix = d.fix;
    card.go_back_to = d.gate.empty() ? route_back : d.gate;
    for (const auto& e : d.evidence) card.evidence.push_back(evidence_line(e));
    for (std::size_t i = 1; i < gate.diagnoses.size(); ++i) {
      card.other_diagnoses.push_back(gate.diagnoses[i].id + ": " + gate.diagnoses[i].symptom);
    }
  } else if (blind) {
    card.symptom = fmt::format("the gate requires {} but the trainer logs no {}",
                               blind->required.front(), blind->field);
    card.cause =
        "the check cannot be made from these logs: nothing was judged wrong, but "
        "nothing proves it right";
    card.fix = blind->what_to_log;
    card.go_back_to = route_back;
  } else {
    card.symptom = card.check_message;
    card.cause = "not identified: no entry of the diagnosis catalog matches these logs";
    card.fix = fmt::format(
        "start from the evidence lines and the rank logs in {}; `bigmac-bringup diagnose {}` "
        "lists what matches",
        gate.attempt_dir.empty() ? input.run_dir : gate.attempt_dir,
        launch::quote_for_display(input.run_dir + "/" + gate.attempt_dir));
    card.go_back_to = route_back;
  }
  if (card.evidence.empty() && failed) {
    for (const auto& e : failed->evidence) {
      card.evidence.push_back(
          e.rank >= 0 ? fmt::format("rank {} line {}: {}", e.rank, e.line, e.text) : e.text);
    }
  }
  card.resume = resume_command(input);
  card.resume_note =
      "after the fix; reruns the failed gate and every passed one whose configuration, trainer "
      "or baseline changed; a --set adds to the configuration the run started with";
  return card;
}

/// A run that stopped without a failed gate: it could not launch one, was interrupted, or its
/// orchestrator died while a gate ran.
VerdictCard stopped_run_card(const ReportInput& input, std::string headline, std::string cause,
                             std::string fix) {
  VerdictCard card;
  card.gate = input.state.current;
  for (const GateReport& g : input.gates) {
    if (g.record.id == card.gate) card.gate_index = g.index;
  }
  card.headline = std::move(headline);
  card.symptom = input.state.message.empty() ? card.headline : input.state.message;
  card.cause = std::move(cause);
  card.fix = std::move(fix);
  card.go_back_to = card.gate;
  card.resume = resume_command(input);
  card.resume_note = "continues at gate " + card.gate;
  return card;
}

}  // namespace

std::string regression_headline(const GateReport& gate) {
  for (const diagnose::Diagnosis& d : gate.diagnoses) {
    if (d.klass == "regression") return d.symptom;
  }
  return {};
}

std::optional<VerdictCard> verdict_card(const ReportInput& input) {
  for (const GateReport& gate : input.gates) {
    if (gate.record.status == run::GateStatus::kFailed) return failed_gate_card(input, gate);
  }
  const std::string gate = input.state.current.empty() ? "?" : input.state.current;
  switch (input.state.phase()) {
    case run::RunPhase::kReady:
    case run::RunPhase::kPassed:
      return std::nullopt;
    case run::RunPhase::kFailed:  // failed, but no gate row says so: say what the state says
      return stopped_run_card(input, "run failed at gate " + gate,
                              "the run state records a failure without a failed gate",
                              "rerun the gate");
    case run::RunPhase::kInfrastructure:
      return stopped_run_card(input, "gate " + gate + " could not run",
                              "the gate could not be launched (exit code 3): its ranks never "
                              "started or the run directory could not be written",
                              "fix what the message names (trainer binary, port, permissions, "
                              "disk), then resume; `bigmac-bringup env` shows what this host "
                              "offers (interpreter and torch, launchers, ports, limits)");
    case run::RunPhase::kInterrupted:
      return stopped_run_card(input, "run interrupted during gate " + gate,
                              "interrupted (Ctrl-C or SIGTERM); the ranks were stopped",
                              "nothing to fix: resume continues at this gate");
    case run::RunPhase::kRunning:
      return stopped_run_card(input, "run did not finish: gate " + gate + " was running",
                              "the orchestrator stopped while the gate ran (killed, or still "
                              "running elsewhere)",
                              "if no bigmac-bringup is running on this directory, resume");
  }
  return std::nullopt;
}

}  // namespace bigmac::report
