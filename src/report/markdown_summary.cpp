#include "report/markdown_summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/failing_metric.h"
#include "report/markup_text.h"
#include "report/step_comparison.h"
#include "report/verdict_card.h"

namespace bigmac::report {
namespace {

std::string_view status_mark(run::GateStatus status) {
  switch (status) {
    case run::GateStatus::kPassed:
      return "✅";
    case run::GateStatus::kFailed:
      return "❌";
    case run::GateStatus::kRunning:
      return "⏳";
    case run::GateStatus::kPending:
      return "⏸️";
    case run::GateStatus::kSkipped:
      return "⏭️";
    case run::GateStatus::kInvalidated:
      return "🔁";
    case run::GateStatus::kInterrupted:
      return "⏹️";
    case run::GateStatus::kAborted:
      return "⚠️";
    case run::GateStatus::kNotApplicable:
      return "➖";
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
  std::size_t unobservable = 0;
  for (const auto& u : gate.verdict->unobservable) unobservable += u.checks.size();
  if (unobservable > 0) out += fmt::format(" ({} unobservable)", unobservable);
  return out;
}

/// What the gates could not check, one line per missing field: warnings, or failures for the
/// checks a gate requires. Outside the collapsed blocks, so a passed gate's gaps are seen.
std::string unobservable_section(const ReportInput& input) {
  std::string out;
  for (const GateReport& gate : input.gates) {
    if (!gate.verdict) continue;
    for (const auto& u : gate.verdict->unobservable) {
      std::string checks;
      for (const std::string& c : u.checks) {
        checks += (checks.empty() ? "`" : ", `") + escape_xml(c) + "`" +
                  (u.is_required(c) ? " (required)" : "");
      }
      out += fmt::format("- {} gate `{}`: {} — {}\n", u.required.empty() ? "⚠️" : "❌",
                         escape_xml(gate.record.id), checks, escape_xml(u.text()));
    }
  }
  return out.empty() ? out : "\n### Unobservable checks\n\n" + out;
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
    if (gate.record.status == run::GateStatus::kFailed) {
      const std::string regression = regression_headline(gate);
      if (!regression.empty()) {
        return fmt::format("## ❌ {}: bigmac-bringup {} failed at gate {} {}",
                           escape_xml(regression), markdown_code(s.run_id), gate.index + 1,
                           markdown_code(gate.record.id));
      }
      return fmt::format("## ❌ bigmac-bringup {}: failed at gate {} {}", markdown_code(s.run_id),
                         gate.index + 1, markdown_code(gate.record.id));
    }
  }
  if (s.phase() == run::RunPhase::kPassed) {
    const int not_applicable = input.count(run::GateStatus::kNotApplicable);
    return fmt::format(
        "## ✅ bigmac-bringup {}: all {} selected gates passed{}", markdown_code(s.run_id),
        input.count(run::GateStatus::kPassed),
        not_applicable > 0 ? fmt::format(", {} not applicable", not_applicable) : std::string());
  }
  return fmt::format("## ⚠️ bigmac-bringup {}: {}", markdown_code(s.run_id),
                     run::phase_name(s.phase()));
}

std::string card_section(const VerdictCard& card) {
  std::string out =
      std::string(card.failed ? "### ❌ " : "### ⚠️ ") + escape_xml(card.headline) + "\n\n";
  if (!card.check_message.empty() && card.check_message != card.symptom) {
    out += "> " + escape_markdown_cell(card.check_message) + "\n\n";
  }
  out += "| | |\n|---|---|\n";
  out += "| Symptom | " + escape_markdown_cell(card.symptom) + " |\n";
  out += "| Cause | " + escape_markdown_cell(card.cause) + " |\n";
  out += "| Fix | " + escape_markdown_cell(card.fix) + " |\n";
  out += "| Go back to | " + markdown_code(card.go_back_to, /*in_table=*/true) + " |\n";
  out += "| Resume | " + markdown_code(card.resume, /*in_table=*/true) + " (" +
         escape_markdown_cell(card.resume_note) + ") |\n";
  if (!card.evidence.empty()) out += "\n" + markdown_code_block(card.evidence);
  if (!card.diagnosis.empty()) {
    out += "\nDiagnosis " + markdown_code(card.diagnosis);
    for (std::size_t i = 0; i < card.other_diagnoses.size(); ++i) {
      out += (i ? "; " : "; also possible: ") + escape_xml(card.other_diagnoses[i]);
    }
    out += "\n";
  }
  return out;
}

/// The failing metric as a table of the steps that tell the story (Markdown has no charts).
std::string metric_section(const FailingMetric& m, const std::string& gate_id) {
  std::string out = "\n**" + escape_xml(m.summary()) + "**\n\n";
  out += fmt::format("| step | {} {} | baseline | rel diff | |\n|---:|---:|---:|---:|---|\n",
                     m.metric, markdown_code(gate_id, /*in_table=*/true));
  const auto first = m.first_divergent_index();
  std::size_t previous = 0;
  const auto rows = m.rows_to_show();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::size_t i = rows[k];
    if (k > 0 && i > previous + 1) out += "| … | | | | |\n";
    previous = i;
    const MetricStep& s = m.steps[i];
    std::string mark;
    if (s.within) mark = *s.within ? "✓" : "✗";
    if (first && i == *first) mark += " ← first divergent step";
    if (!s.run) mark = "not reached";
    out += fmt::format("| {} | {} | {} | {} | {} |\n", s.step, s.run ? format_value(*s.run) : "–",
                       s.baseline ? format_value(*s.baseline) : "–",
                       s.rel_diff ? format_relative(*s.rel_diff) : "–", mark);
  }
  return out;
}

/// A gate's checks as a collapsed block: open for the failed gate, closed for the others.
std::string gate_details(const GateReport& gate) {
  const bool failed = gate.record.status == run::GateStatus::kFailed;
  std::string out = fmt::format(
      "\n<details{}><summary>{} Gate {} <code>{}</code> {} — {} checks, {}</summary>\n\n",
      failed ? " open" : "", status_mark(gate.record.status), gate.index + 1,
      escape_xml(gate.record.id), run::status_name(gate.record.status), checks_cell(gate),
      format_duration(gate.duration_s()));
  if (gate.verdict) {
    out += "| check | result | message |\n|---|---|---|\n";
    for (const auto& r : gate.verdict->results) {
      // A non-breaking space keeps the result on one line in narrow tables.
      const bool warned = r.passed && !r.warning.empty();
      out += fmt::format(
          "| {} | {} | {} |\n", escape_markdown_cell(r.name),
          warned     ? "⚠&nbsp;warning"
          : r.passed ? "✓&nbsp;pass"
                     : "✗&nbsp;fail",
          escape_markdown_cell(warned ? r.message + ". Warning: " + r.warning : r.message));
    }
    for (const auto& u : gate.verdict->unobservable) {
      for (const std::string& c : u.checks) {
        out += fmt::format(
            "| {} | {} | {} |\n", escape_markdown_cell(c),
            u.is_required(c) ? "✗&nbsp;unobservable&nbsp;(required)" : "⚠&nbsp;unobservable",
            escape_markdown_cell(u.text()));
      }
    }
    for (const auto& reason : gate.verdict->not_run) {
      out += "| | not&nbsp;run | " + escape_markdown_cell(reason) + " |\n";
    }
    for (const auto& r : gate.verdict->results) {
      if (r.passed || r.evidence.empty()) continue;
      std::vector<std::string> lines;
      for (const auto& e : r.evidence) {
        lines.push_back(fmt::format("rank {} line {}: {}", e.rank, e.line, e.text));
      }
      out += "\n" + markdown_code(r.name) + " evidence:\n\n" + markdown_code_block(lines);
    }
  } else if (!gate.record.note.empty()) {
    out += escape_xml(gate.record.note) + "\n";
  }
  if (!gate.field_sources.empty()) {
    out += "\n| field | logged by |\n|---|---|\n";
    for (const auto& [field, source] : gate.field_sources) {
      out +=
          fmt::format("| `{}` | {} |\n", escape_markdown_cell(field), escape_markdown_cell(source));
    }
  }
  for (const auto& n : gate.notes) out += "\n> note: " + escape_xml(n) + "\n";
  return out + "\n</details>\n";
}

}  // namespace

std::string render_markdown(const ReportInput& input) {
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  std::string out = headline(input) + "\n\n";
  // Failure first: the verdict card and the failing metric, then every gate.
  if (const auto card = verdict_card(input)) {
    out += card_section(*card);
    const GateReport& gate = input.gates.at(card->gate_index);
    if (auto metric = failing_metric(gate, reference)) {
      out += metric_section(*metric, gate.record.id);
    }
    out += "\n### Gates\n\n";
  } else if (!input.state.message.empty()) {
    out += escape_xml(input.state.message) + "\n\n";
  }
  out += "| # | gate | status | duration | checks | last loss |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const GateReport& gate : input.gates) {
    out += fmt::format("| {} | {} | {}&nbsp;{} | {} | {} | {} |\n", gate.index + 1,
                       markdown_code(gate.record.id, /*in_table=*/true),
                       status_mark(gate.record.status), run::status_name(gate.record.status),
                       format_duration(gate.duration_s()), checks_cell(gate),
                       loss_cell(gate, reference));
  }
  std::string not_applicable;
  for (const GateReport& gate : input.gates) {
    if (gate.record.status != run::GateStatus::kNotApplicable) continue;
    not_applicable +=
        fmt::format("- gate {}: {}\n", markdown_code(gate.record.id), escape_xml(gate.record.note));
  }
  if (!not_applicable.empty()) out += "\n### Not applicable\n\n" + not_applicable;
  out += unobservable_section(input);
  for (const GateReport& gate : input.gates) {
    if (gate.record.status == run::GateStatus::kFailed) out += gate_details(gate);
  }
  for (const GateReport& gate : input.gates) {
    if (gate.record.status != run::GateStatus::kFailed && (gate.verdict || !gate.notes.empty()))
      out += gate_details(gate);
  }
  for (const auto& n : input.notes) out += "\n> note: " + escape_xml(n) + "\n";
  if (reference) {
    out += fmt::format("\nBaseline: {} ({} steps).\n", markdown_code(reference->name),
                       reference->steps.size());
  }
  return out;
}

}  // namespace bigmac::report
