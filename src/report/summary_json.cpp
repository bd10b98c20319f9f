#include "report/summary_json.h"

#include <cmath>

#include "report/step_comparison.h"
#include "report/verdict_card.h"

namespace bigmac::report {
namespace {

/// JSON has no NaN: non-finite numbers go out as the strings the log contract accepts.
nlohmann::json number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? number(*value) : nlohmann::json(nullptr);
}

nlohmann::json steps_json(const GateReport& gate, const baseline::Baseline* reference) {
  const StepComparison c = compare_steps(gate, reference);
  return {{"logged", c.steps},
          {"compared_with_baseline", c.compared},
          {"last_loss", optional_number(c.last_loss)},
          {"baseline_last_loss", optional_number(c.baseline_last_loss)},
          {"max_abs_loss_diff", c.compared ? number(c.max_abs_loss_diff) : nlohmann::json(nullptr)},
          {"max_abs_loss_diff_step",
           c.max_diff_step ? nlohmann::json(*c.max_diff_step) : nlohmann::json(nullptr)},
          {"non_finite_losses", c.non_finite}};
}

nlohmann::json gate_json(const GateReport& gate, const baseline::Baseline* reference) {
  nlohmann::json out = {{"id", gate.record.id},
                        {"number", gate.index + 1},
                        {"status", run::status_name(gate.record.status)},
                        {"attempts", gate.record.attempts},
                        {"attempt_dir", gate.attempt_dir},
                        {"duration_s", number(gate.duration_s())},
                        {"note", gate.record.note},
                        {"failed_check", gate.record.failed_check},
                        {"route_back", gate.record.route_back}};
  nlohmann::json checks = nlohmann::json::array();
  nlohmann::json not_run = nlohmann::json::array();
  if (gate.verdict) {
    const auto verdict = gates::to_json(*gate.verdict);
    checks = verdict["checks"];
    not_run = verdict["not_run"];
  }
  out["verdict"] = gate.verdict ? nlohmann::json(gate.verdict->passed ? "passed" : "failed")
                                : nlohmann::json(nullptr);
  out["checks"] = std::move(checks);
  out["not_run"] = std::move(not_run);
  out["diagnoses"] = diagnose::to_json(gate.diagnoses);
  out["ranks"] = gate.result ? to_json(*gate.result)["ranks"] : nlohmann::json::array();
  out["launch_status"] =
      gate.result ? nlohmann::json(gate.result->status) : nlohmann::json(nullptr);
  out["ranks_logged"] = gate.ranks_logged;
  out["steps"] = steps_json(gate, reference);
  out["micro_batch_events"] = gate.micro_batches.size();
  // Which values the trainer logged itself and which the probe supplied (docs/probe.md).
  out["field_sources"] = gate.field_sources;
  out["notes"] = gate.notes;
  out["started_at"] = gate.started_at() > 0 ? number(gate.started_at()) : nlohmann::json(nullptr);
  out["files"] = gate.files;
  return out;
}

/// The card every report opens with, for tools: null when the run passed.
nlohmann::json card_json(const ReportInput& input) {
  const auto card = verdict_card(input);
  if (!card) return nullptr;
  return {{"gate", card->gate},
          {"headline", card->headline},
          {"check", card->check},
          {"check_message", card->check_message},
          {"diagnosis", card->diagnosis},
          {"symptom", card->symptom},
          {"evidence", card->evidence},
          {"cause", card->cause},
          {"fix", card->fix},
          {"go_back_to", card->go_back_to},
          {"resume", card->resume},
          {"resume_note", card->resume_note}};
}

}  // namespace

nlohmann::json summary_json(const ReportInput& input) {
  using run::GateStatus;
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  nlohmann::json gates_out = nlohmann::json::array();
  for (const GateReport& gate : input.gates) gates_out.push_back(gate_json(gate, reference));
  nlohmann::json baseline_out = nullptr;
  if (reference) {
    baseline_out = {{"path", input.baseline_path},
                    {"name", reference->name},
                    {"steps", reference->steps.size()}};
  }
  double started = 0;
  for (const GateReport& gate : input.gates) {
    if (gate.started_at() > 0 && (started == 0 || gate.started_at() < started)) {
      started = gate.started_at();
    }
  }
  return {{"format", "bigmac-report-summary/1"},
          {"tool_version", input.tool_version},
          {"run_id", input.state.run_id},
          {"started_at", started > 0 ? number(started) : nlohmann::json(nullptr)},
          {"invocation", input.invocation},
          {"phase", run::phase_name(input.state.phase())},
          {"passed", input.state.phase() == run::RunPhase::kPassed},
          {"message", input.state.message},
          {"verdict_card", card_json(input)},
          {"counts",
           {{"total", input.gates.size()},
            {"passed", input.count(GateStatus::kPassed)},
            {"failed", input.count(GateStatus::kFailed)},
            {"pending", input.count(GateStatus::kPending)},
            {"running", input.count(GateStatus::kRunning)},
            {"skipped", input.count(GateStatus::kSkipped)},
            {"invalidated", input.count(GateStatus::kInvalidated)},
            {"not_applicable", input.count(GateStatus::kNotApplicable)}}},
          {"baseline", std::move(baseline_out)},
          {"gates", std::move(gates_out)},
          {"notes", input.notes}};
}

}  // namespace bigmac::report
