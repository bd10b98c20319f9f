#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/diagnosis_text.h"
#include "report/line_chart.h"
#include "report/markup_text.h"
#include "report/schedule_chart.h"

namespace bigmac::report {
namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;background:#fff;max-width:1120px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccd;padding:3px 8px;text-align:left;vertical-align:top}
.passed{color:#137333}.failed{color:#b3261e}.pending,.skipped,.running,.invalidated{color:#6b6f76}
.note{background:#fff7d6;padding:4px 8px}.diagnosis{border-left:4px solid #b3261e;padding:4px 12px;background:#fdf1f0}
pre{background:#f4f5f7;padding:6px;overflow-x:auto;white-space:pre-wrap}
svg text{font:11px sans-serif;fill:#333}svg .title{font-weight:bold}
.plots{display:flex;flex-wrap:wrap;gap:8px}
.axis{stroke:#888;fill:none}polyline{fill:none;stroke-width:2}
polyline.run,line.run{stroke:#1a73e8;stroke-width:2}polyline.baseline,line.baseline{stroke:#e37400;stroke-dasharray:5 4;stroke-width:2}
.nonfinite{fill:#b3261e;font-weight:bold}
rect.mb.F{fill:#8ab4f8}rect.mb.B{fill:#f6ae7a}rect.bar.passed{fill:#81c995}rect.bar.failed{fill:#f28b82}
rect.bar.pending,rect.bar.skipped,rect.bar.running,rect.bar.invalidated{fill:#dadce0}
)";

std::string status_class(gates::GateStatus status) {
  return std::string(gates::status_name(status));
}

/// Gates side by side on one time axis: by wall time when the attempts recorded it, else one
/// slot each so a run without times still shows its order and status.
std::string timeline(const ReportInput& input) {
  const double width = 1080, left = 8, right = width - 8, row = 26;
  double t0 = 0, t1 = 0;
  for (const auto& g : input.gates) {
    if (g.started_at() <= 0) continue;
    if (t0 == 0 || g.started_at() < t0) t0 = g.started_at();
    t1 = std::max(t1, g.started_at() + g.duration_s());
  }
  const bool timed = t1 > t0;
  const double slot =
      (right - left) / static_cast<double>(std::max<std::size_t>(1, input.gates.size()));
  std::string out = fmt::format(
      "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"gate timeline\">\n",
      width, row + 22);
  for (const auto& g : input.gates) {
    double x = left + slot * static_cast<double>(g.index), w = slot - 4;
    if (timed && g.started_at() > 0) {
      x = left + (g.started_at() - t0) / (t1 - t0) * (right - left);
      w = std::max(24.0, g.duration_s() / (t1 - t0) * (right - left) - 2);
    } else if (timed) {
      continue;  // never ran: no place on a time axis
    }
    out += fmt::format(
        "<rect class=\"bar {}\" x=\"{:.1f}\" y=\"4\" width=\"{:.1f}\" height=\"{}\"><title>{} {} "
        "{}</title></rect>"
        "<text x=\"{:.1f}\" y=\"{}\">{}</text>\n",
        status_class(g.record.status), x, w, row - 4, escape_xml(g.record.id),
        gates::status_name(g.record.status), escape_xml(format_duration(g.duration_s())), x + 4,
        row - 6, escape_xml(g.record.id));
  }
  if (timed) {
    out += fmt::format(
        "<text class=\"tick\" x=\"{}\" y=\"{}\">0 s</text><text class=\"tick\" x=\"{}\" "
        "y=\"{}\" text-anchor=\"end\">{}</text>\n",
        left, row + 18, right, row + 18, escape_xml(format_duration(t1 - t0)));
  }
  return out + "</svg>\n";
}

std::string plots(const GateReport& gate, const baseline::Baseline* reference) {
  struct Metric {
    const char* name;
    std::optional<double> logs::StepRecord::*run;
    std::optional<double> baseline::BaselineStep::*base;
  };
  const Metric metrics[] = {
      {"loss", &logs::StepRecord::loss, &baseline::BaselineStep::loss},
      {"grad_norm", &logs::StepRecord::grad_norm, &baseline::BaselineStep::grad_norm},
      {"lr", &logs::StepRecord::lr, &baseline::BaselineStep::lr}};
  std::string out = "<div class=\"plots\">\n";
  for (const Metric& m : metrics) {
    // The dashed baseline goes on top, so a run that matches it shows both lines.
    std::vector<ChartSeries> series;
    ChartSeries run{gate.record.id, "run", {}};
    for (const auto& s : gate.steps) {
      if (s.*m.run) run.points.emplace_back(static_cast<double>(s.global_step), *(s.*m.run));
    }
    series.push_back(std::move(run));
    if (reference) {
      ChartSeries base{"baseline", "baseline", {}};
      for (const auto& s : reference->steps) {
        if (s.*m.base) base.points.emplace_back(static_cast<double>(s.global_step), *(s.*m.base));
      }
      series.push_back(std::move(base));
    }
    out += line_chart(fmt::format("{} — {}", gate.record.id, m.name), "global step", series);
  }
  return out + "</div>\n";
}

std::string checks_table(const gates::GateVerdict& verdict) {
  std::string out =
      "<table class=\"checks\"><tr><th>check</th><th>result</th><th>message and "
      "evidence</th></tr>\n";
  for (const auto& r : verdict.results) {
    out += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}", escape_xml(r.name),
                       r.passed ? "passed" : "failed", r.passed ? "✓ pass" : "✗ fail",
                       escape_xml(r.message));
    if (!r.evidence.empty()) {
      out += "<pre>";
      for (const auto& e : r.evidence) {
        out += escape_xml(fmt::format("rank {} line {}: {}", e.rank, e.line, e.text)) + "\n";
      }
      out += "</pre>";
    }
    out += "</td></tr>\n";
  }
  for (const auto& reason : verdict.not_run) {
    out += "<tr><td colspan=\"2\" class=\"skipped\">not run</td><td>" + escape_xml(reason) +
           "</td></tr>\n";
  }
  return out + "</table>\n";
}

std::string diagnosis_block(const diagnose::Diagnosis& d) {
  std::string out = fmt::format(
      "<div class=\"diagnosis\"><h3>Diagnosis <code>{}</code></h3><table>"
      "<tr><th>Symptom</th><td>{}</td></tr><tr><th>Cause</th><td>{}</td></tr>"
      "<tr><th>Fix</th><td>{}</td></tr><tr><th>Go back "
      "to</th><td><code>{}</code></td></tr></table>\n",
      escape_xml(d.id), escape_xml(d.symptom), escape_xml(d.cause), escape_xml(d.fix),
      escape_xml(d.gate));
  if (!d.evidence.empty()) {
    out += "<pre>";
    for (const auto& e : d.evidence) out += escape_xml(evidence_line(e)) + "\n";
    out += "</pre>";
  }
  return out + "</div>\n";
}

std::string gate_section(const GateReport& gate, const baseline::Baseline* reference) {
  const std::string status = status_class(gate.record.status);
  std::string out = fmt::format(
      "<section id=\"gate-{0}\"><h2>{1}. {0} <span class=\"{2}\">{2}</span></h2>\n<p>attempts {3}",
      escape_xml(gate.record.id), gate.index + 1, status, gate.record.attempts);
  if (!gate.attempt_dir.empty())
    out += " · folder <code>" + escape_xml(gate.attempt_dir) + "</code>";
  out += " · duration " + escape_xml(format_duration(gate.duration_s()));
  if (gate.ranks_logged) out += fmt::format(" · {} rank logs", gate.ranks_logged);
  out += "</p>\n";
  if (!gate.record.note.empty()) out += "<p>" + escape_xml(gate.record.note) + "</p>\n";
  for (const auto& n : gate.notes) out += "<p class=\"note\">" + escape_xml(n) + "</p>\n";
  if (gate.verdict) out += checks_table(*gate.verdict);
  for (const auto& d : gate.diagnoses) out += diagnosis_block(d);
  if (!gate.steps.empty() || gate.verdict) out += plots(gate, reference);
  if (gate.pipelined()) {
    out += "<h3>Pipeline schedule</h3>\n" + schedule_chart(gate.micro_batches);
  }
  return out + "</section>\n";
}

}  // namespace

std::string render_html(const ReportInput& input) {
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  const auto& s = input.state;
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">\n"
      "<title>bigmac-bringup {}</title>\n<style>{}</style></head>\n<body>\n"
      "<h1>bigmac-bringup run <code>{}</code>: <span class=\"{}\">{}</span></h1>\n",
      escape_xml(s.run_id), kStyle, escape_xml(s.run_id),
      s.phase() == gates::RunPhase::kPassed ? "passed" : "failed",
      escape_xml(gates::phase_name(s.phase())));
  if (!s.message.empty()) out += "<p>" + escape_xml(s.message) + "</p>\n";
  if (reference) {
    out += fmt::format("<p>Baseline <code>{}</code>, {} steps.</p>\n", escape_xml(reference->name),
                       reference->steps.size());
  }
  for (const auto& n : input.notes) out += "<p class=\"note\">" + escape_xml(n) + "</p>\n";
  out += "<h2>Timeline</h2>\n" + timeline(input);
  out +=
      "<table "
      "class=\"gates\"><tr><th>#</th><th>gate</th><th>status</th><th>attempts</th><th>duration</"
      "th><th>note</th></tr>\n";
  for (const auto& g : input.gates) {
    const std::string status = status_class(g.record.status);
    out += fmt::format(
        "<tr><td>{}</td><td><a href=\"#gate-{}\">{}</a></td><td "
        "class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        g.index + 1, escape_xml(g.record.id), escape_xml(g.record.id), status, status,
        g.record.attempts, escape_xml(format_duration(g.duration_s())), escape_xml(g.record.note));
  }
  out += "</table>\n";
  for (const auto& g : input.gates) {
    if (g.record.attempts > 0 || g.verdict) out += gate_section(g, reference);
  }
  return out + "</body></html>\n";
}

}  // namespace bigmac::report
