#include "report/markdown_summary.h"

#include <fmt/format.h>

#include "report/diagnosis_text.h"
#include "report/markup_text.h"
#include "report/step_comparison.h"

namespace bigmac::report {
namespace {

std::string_view status_mark(gates::GateStatus status) {
  switch (status) {
    case gates::GateStatus::kPassed:
      return "✅";
    case gates::GateStatus::kFailed:
      return "❌";
    case gates::GateStatus::kRunning:
      return "⏳";
    case gates::GateStatus::kPending:
      return "⏸️";
    case gates::GateStatus::kSkipped:
      return "⏭️";
    case gates::GateStatus::kInvalidated:
      return "🔁";
    case gates::GateStatus::kInterrupted:
      return "⏹️";
    case gates::GateStatus::kAborted:
      return "⚠️";
  }
  return "?";
}

std::string checks_cell(const GateReport& gate) {
  if (!gate.verdict) return "–";
  int passed = 0;
  for (const auto& r : gate.verdict->results) passed += r.passed ? 1 : 0;
  std::string out = fmt::format("{}/{}", passed, gate.verdict->results.size());
  if (!gate.verdict->not_run.empty())
    out += fmt::format(" ({} not run)", gate.verdict->not_run.size());
  return out;
}

std::string loss_cell(const GateReport& gate, const baseline::Baseline* reference) {
  const StepComparison c = compare_steps(gate, reference);
  if (!c.last_loss) return "–";
  std::string out = format_value(*c.last_loss);
  if (c.baseline_last_loss) out += " (baseline " + format_value(*c.baseline_last_loss) + ")";
  return out;
}

std::string headline(const ReportInput& input) {
  const auto& s = input.state;
  for (const GateReport& gate : input.gates) {
    if (gate.record.status == gates::GateStatus::kFailed) {
      return fmt::format("## ❌ bigmac-bringup `{}`: failed at gate {} `{}`", s.run_id,
                         gate.index + 1, gate.record.id);
    }
  }
  if (s.phase() == gates::RunPhase::kPassed) {
    return fmt::format("## ✅ bigmac-bringup `{}`: all {} selected gates passed", s.run_id,
                       input.count(gates::GateStatus::kPassed));
  }
  return fmt::format("## ⚠️ bigmac-bringup `{}`: {}", s.run_id, gates::phase_name(s.phase()));
}

std::string failure_section(const GateReport& gate) {
  std::string out = fmt::format("\n### ❌ Gate {} `{}`\n\n", gate.index + 1, gate.record.id);
  if (gate.verdict) {
    for (const auto& r : gate.verdict->results) {
      if (r.passed) continue;
      out += fmt::format("- **{}** failed: {}\n", escape_xml(r.name), escape_xml(r.message));
      for (const auto& e : r.evidence) {
        out += fmt::format("  - rank {} line {}: `{}`\n", e.rank, e.line, e.text);
      }
    }
  } else if (!gate.record.note.empty()) {
    out += "- " + escape_xml(gate.record.note) + "\n";
  }
  for (const auto& n : gate.notes) out += "- note: " + escape_xml(n) + "\n";
  for (std::size_t i = 0; i < gate.diagnoses.size(); ++i) {
    const auto& d = gate.diagnoses[i];
    out += fmt::format("\n**Diagnosis{}** `{}`\n\n",
                       gate.diagnoses.size() > 1 ? fmt::format(" {}", i + 1) : "", d.id);
    out += "| | |\n|---|---|\n";
    out += "| Symptom | " + escape_markdown_cell(d.symptom) + " |\n";
    out += "| Cause | " + escape_markdown_cell(d.cause) + " |\n";
    out += "| Fix | " + escape_markdown_cell(d.fix) + " |\n";
    out += "| Go back to | `" + escape_markdown_cell(d.gate) + "` |\n";
    if (!d.evidence.empty()) {
      out += "\n```text\n";
      for (const auto& e : d.evidence) out += evidence_line(e) + "\n";
      out += "```\n";
    }
  }
  return out;
}

}  // namespace

std::string render_markdown(const ReportInput& input) {
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  std::string out = headline(input) + "\n\n";
  if (!input.state.message.empty()) out += escape_xml(input.state.message) + "\n\n";
  out += "| # | gate | status | duration | checks | last loss |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const GateReport& gate : input.gates) {
    out += fmt::format("| {} | `{}` | {} {} | {} | {} | {} |\n", gate.index + 1,
                       escape_markdown_cell(gate.record.id), status_mark(gate.record.status),
                       gates::status_name(gate.record.status), format_duration(gate.duration_s()),
                       checks_cell(gate), loss_cell(gate, reference));
  }
  for (const GateReport& gate : input.gates) {
    if (gate.record.status == gates::GateStatus::kFailed) out += failure_section(gate);
  }
  for (const auto& n : input.notes) out += "\n> note: " + escape_xml(n) + "\n";
  if (reference) {
    out += fmt::format("\nBaseline: `{}` ({} steps).\n", escape_xml(reference->name),
                       reference->steps.size());
  }
  return out;
}

}  // namespace bigmac::report
