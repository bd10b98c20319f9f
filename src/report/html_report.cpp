#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "report/diagnosis_text.h"
#include "report/failing_metric.h"
#include "report/line_chart.h"
#include "report/markup_text.h"
#include "report/metric_chart.h"
#include "report/schedule_chart.h"
#include "report/verdict_card.h"

namespace bigmac::report {
namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:16px 24px;color:#1d232a;background:#fff;max-width:1120px}
h1{font-size:20px;margin:0 0 10px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccd;padding:3px 8px;text-align:left;vertical-align:top}
td.result,td.status{white-space:nowrap}
.passed{color:#137333}.failed{color:#b3261e}.unobservable{color:#a15c00}.pending,.skipped,.running,.invalidated{color:#6b6f76}
.note{background:#fff7d6;padding:4px 8px}.diagnosis{border-left:4px solid #b3261e;padding:4px 12px;background:#fdf1f0}
.card{border:2px solid #b3261e;border-left:8px solid #b3261e;border-radius:4px;padding:6px 14px 10px;background:#fdf1f0}
.card h2{margin:4px 0 6px;border:0;color:#b3261e}.card table{margin:4px 0;background:#fff;width:100%}
.card th{width:92px;white-space:nowrap}.card pre{margin:0;max-height:7.5em;overflow-y:auto}.card p{margin:4px 0}
pre{background:#f4f5f7;padding:6px;overflow-x:auto;white-space:pre-wrap}
details.gate{border:1px solid #ccd;border-radius:4px;margin:8px 0;padding:0 10px;color:#1d232a}
details.gate>summary{cursor:pointer;padding:6px 0;font-weight:600}
svg text{font:11px sans-serif;fill:#333}svg .title{font-weight:bold}
.plots{display:flex;flex-wrap:wrap;gap:8px}
.axis{stroke:#888;fill:none}.grid{stroke:#e8eaed}.tickmark{stroke:#888}polyline{fill:none;stroke-width:2}
polyline.run,line.run{stroke:#1a73e8;stroke-width:2}polyline.baseline,line.baseline{stroke:#e37400;stroke-dasharray:5 4;stroke-width:2}
polyline.diff,line.diff{stroke:#8430ce;stroke-width:2}polyline.tolerance,line.tolerance{stroke:#b3261e;stroke-dasharray:2 3;stroke-width:1.5}
polygon.band,rect.band{fill:#34a853;fill-opacity:.18;stroke:none}
line.marker{stroke:#b3261e;stroke-width:1.5;stroke-dasharray:4 3}svg text.markerlabel{fill:#b3261e;font-weight:bold}
rect.hover{fill:transparent}rect.hover:hover{fill:#1a73e8;fill-opacity:.08}
.nonfinite{fill:#b3261e;font-weight:bold}
rect.mb.F{fill:#8ab4f8}rect.mb.B{fill:#f6ae7a}rect.bar.passed{fill:#81c995}rect.bar.failed{fill:#f28b82}
rect.bar.pending,rect.bar.skipped,rect.bar.running,rect.bar.invalidated,rect.bar.not-applicable{fill:#dadce0}
)";

std::string status_class(run::GateStatus status) {
  std::string name(run::status_name(status));
  std::replace(name.begin(), name.end(), ' ', '-');  // "not applicable": one class name
  return name;
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
        run::status_name(g.record.status), escape_xml(format_duration(g.duration_s())), x + 4,
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
    const bool warned = r.passed && !r.warning.empty();
    out += fmt::format("<tr><td>{}</td><td class=\"result {}\">{}</td><td>{}", escape_xml(r.name),
                       warned     ? "unobservable"
                       : r.passed ? "passed"
                                  : "failed",
                       warned     ? "⚠ warning"
                       : r.passed ? "✓ pass"
                                  : "✗ fail",
                       escape_xml(r.message));
    if (warned) out += "<p class=\"warning\">warning: " + escape_xml(r.warning) + "</p>";
    if (!r.evidence.empty()) {
      out += "<pre>";
      for (const auto& e : r.evidence) {
        out += escape_xml(fmt::format("rank {} line {}: {}", e.rank, e.line, e.text)) + "\n";
      }
      out += "</pre>";
    }
    out += "</td></tr>\n";
  }
  for (const auto& u : verdict.unobservable) {
    for (const std::string& c : u.checks) {
      const bool required = u.is_required(c);
      out += fmt::format("<tr><td>{}</td><td class=\"result {}\">{}</td><td>{}</td></tr>\n",
                         escape_xml(c), required ? "failed" : "unobservable",
                         required ? "✗ unobservable (required)" : "⚠ unobservable",
                         escape_xml(u.text()));
    }
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

/// Checks passed and run, for a gate's one-line summary.
std::string checks_count(const GateReport& gate) {
  if (!gate.verdict) return "no verdict";
  std::size_t passed = 0;
  for (const auto& r : gate.verdict->results) passed += r.passed ? 1 : 0;
  std::size_t unobservable = 0;
  for (const auto& u : gate.verdict->unobservable) unobservable += u.checks.size();
  return fmt::format("{}/{} checks{}", passed, gate.verdict->results.size(),
                     unobservable > 0 ? fmt::format(", {} unobservable", unobservable) : "");
}

/// One gate as a <details> block: a failed gate open, every other one closed until clicked.
std::string gate_section(const GateReport& gate, const baseline::Baseline* reference) {
  const std::string status = status_class(gate.record.status);
  const bool failed = gate.record.status == run::GateStatus::kFailed;
  std::string out = fmt::format(
      "<details class=\"gate {2}\" id=\"gate-{0}\"{4}><summary>{1}. {0} <span "
      "class=\"{2}\">{2}</span> · {3}",
      escape_xml(gate.record.id), gate.index + 1, status, checks_count(gate),
      failed ? " open" : "");
  out += " · " + escape_xml(format_duration(gate.duration_s()));
  if (gate.ranks_logged) out += fmt::format(" · {} rank logs", gate.ranks_logged);
  out += "</summary>\n<p>attempts " + std::to_string(gate.record.attempts);
  if (!gate.attempt_dir.empty())
    out += " · folder <code>" + escape_xml(gate.attempt_dir) + "</code>";
  out += "</p>\n";
  if (!gate.files.empty() && !gate.attempt_dir.empty()) {
    // Relative to report.html, which sits in the run directory beside the attempt folders: the
    // links work wherever the run directory is copied.
    out += "<p class=\"files\">files:";
    for (const std::string& f : gate.files) {
      const std::string href = escape_xml(gate.attempt_dir + "/" + f);
      out += fmt::format(" <a href=\"{}\">{}</a>", href, escape_xml(f));
    }
    out += "</p>\n";
  }
  if (!gate.record.note.empty()) out += "<p>" + escape_xml(gate.record.note) + "</p>\n";
  for (const auto& n : gate.notes) out += "<p class=\"note\">" + escape_xml(n) + "</p>\n";
  if (gate.verdict) out += checks_table(*gate.verdict);
  for (const auto& d : gate.diagnoses) out += diagnosis_block(d);
  if (!gate.steps.empty() || gate.verdict) out += plots(gate, reference);
  if (gate.pipelined()) {
    out += "<h3>Pipeline schedule</h3>\n" + schedule_chart(gate.micro_batches);
  }
  return out + "</details>\n";
}

/// Every gate's loss over the baseline, side by side, open on the page: a passed run shows its
/// curves without a click. Gates without a logged loss are left out.
std::string loss_overview(const ReportInput& input, const baseline::Baseline* reference) {
  std::string charts;
  for (const GateReport& gate : input.gates) {
    ChartSeries run{gate.record.id, "run", {}};
    for (const auto& s : gate.steps) {
      if (s.loss) run.points.emplace_back(static_cast<double>(s.global_step), *s.loss);
    }
    if (run.points.empty()) continue;
    std::vector<ChartSeries> series{std::move(run)};
    if (reference) {
      ChartSeries base{"baseline", "baseline", {}};
      for (const auto& s : reference->steps) {
        if (s.loss) base.points.emplace_back(static_cast<double>(s.global_step), *s.loss);
      }
      series.push_back(std::move(base));
    }
    charts += line_chart(fmt::format("{}. {} — loss", gate.index + 1, gate.record.id),
                         "global step", series);
  }
  if (charts.empty()) return {};
  return "<section class=\"overview\" id=\"loss\"><h2>Loss of every gate" +
         std::string(reference ? " over the baseline" : "") + "</h2>\n<div class=\"plots\">\n" +
         charts + "</div></section>\n";
}

/// Where and how the run was started (invocation.json), and each gate's effective configuration
/// file, as the run directory holds them.
std::string run_section(const ReportInput& input) {
  std::string rows;
  const nlohmann::json& inv = input.invocation;
  auto row = [&](const char* name, const std::string& value) {
    if (!value.empty()) {
      rows +=
          fmt::format("<tr><th>{}</th><td><code>{}</code></td></tr>\n", name, escape_xml(value));
    }
  };
  if (inv.is_object()) {
    // Paths as the user gave them, relative to where the run started when inside it.
    const std::filesystem::path cwd = inv.value("cwd", std::string());
    auto relative = [&](const std::string& path) {
      if (path.empty() || cwd.empty()) return path;
      const std::filesystem::path rel = std::filesystem::path(path).lexically_relative(cwd);
      return rel.empty() || rel.string().rfind("..", 0) == 0 ? path : rel.string();
    };
    const std::string config = inv.value("config", std::string());
    row("configuration", config.empty() ? "(the built-in defaults)" : relative(config));
    if (inv.contains("set") && inv["set"].is_array()) {
      std::string sets;
      for (const auto& v : inv["set"])
        sets += (sets.empty() ? "" : " ") + ("--set " + v.get<std::string>());
      row("overrides", sets);
    }
    row("baseline", relative(inv.value("baseline", std::string())));
  }
  if (!input.tool_version.empty()) row("tool", "bigmac-bringup " + input.tool_version);
  for (const GateReport& g : input.gates) {
    for (const std::string& f : g.files) {
      if (f == "gate.toml") {
        rows += fmt::format(
            "<tr><th>{} configuration</th><td><a href=\"{}/gate.toml\">{}/gate.toml</a> "
            "(effective, "
            "every value and where it came from)</td></tr>\n",
            escape_xml(g.record.id), escape_xml(g.attempt_dir), escape_xml(g.attempt_dir));
      }
    }
  }
  if (rows.empty()) return {};
  return "<h2>Run</h2>\n<table class=\"run\">" + rows + "</table>\n";
}

/// The failed gate's verdict, first on the page: what a user acts on without scrolling.
std::string card_section(const VerdictCard& card) {
  constexpr std::size_t kEvidenceShown = 6;
  std::string out = fmt::format("<section class=\"card\" id=\"verdict\"><h2>{} {}</h2>\n",
                                card.failed ? "✗" : "⚠", escape_xml(card.headline));
  if (!card.check_message.empty() && card.check_message != card.symptom) {
    out += "<p class=\"check\">" + escape_xml(card.check_message) + "</p>\n";
  }
  out += "<table><tr><th>Symptom</th><td>" + escape_xml(card.symptom) + "</td></tr>\n";
  if (!card.evidence.empty()) {
    out += "<tr><th>Evidence</th><td><pre>";
    for (std::size_t i = 0; i < card.evidence.size() && i < kEvidenceShown; ++i) {
      out += escape_xml(card.evidence[i]) + "\n";
    }
    if (card.evidence.size() > kEvidenceShown) {
      out += fmt::format("({} more lines in the gate's section)\n",
                         card.evidence.size() - kEvidenceShown);
    }
    out += "</pre></td></tr>\n";
  }
  out += fmt::format(
      "<tr><th>Cause</th><td>{}</td></tr>\n<tr><th>Fix</th><td>{}</td></tr>\n"
      "<tr><th>Go back to</th><td><code>{}</code></td></tr>\n"
      "<tr><th>Resume</th><td><code>{}</code> ({})</td></tr></table>\n",
      escape_xml(card.cause), escape_xml(card.fix), escape_xml(card.go_back_to),
      escape_xml(card.resume), escape_xml(card.resume_note));
  if (!card.diagnosis.empty()) {
    out += "<p>Diagnosis <code>" + escape_xml(card.diagnosis) + "</code>";
    if (!card.other_diagnoses.empty()) {
      out += "; also possible: ";
      for (std::size_t i = 0; i < card.other_diagnoses.size(); ++i) {
        out += (i ? "; " : "") + escape_xml(card.other_diagnoses[i]);
      }
    }
    out += "</p>\n";
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
      s.phase() == run::RunPhase::kPassed ? "passed" : "failed",
      escape_xml(run::phase_name(s.phase())));
  // Failure first: the verdict card, then the failing metric, then the failed gate in full.
  const std::optional<VerdictCard> card = verdict_card(input);
  if (card) {
    out += card_section(*card);
    const GateReport& gate = input.gates.at(card->gate_index);
    if (auto metric = failing_metric(gate, reference)) {
      out += "<section class=\"focus\"><h2>" + escape_xml(metric->summary()) + "</h2>\n" +
             metric_chart(*metric, gate.record.id) + "</section>\n";
    }
    if (gate.record.attempts > 0 || gate.verdict) out += gate_section(gate, reference);
  } else if (!s.message.empty()) {
    out += "<p>" + escape_xml(s.message) + "</p>\n";
  }
  if (!card) out += loss_overview(input, reference);
  out += "<h2>Gates</h2>\n";
  if (reference) {
    out += fmt::format("<p>Baseline <code>{}</code>, {} steps.</p>\n", escape_xml(reference->name),
                       reference->steps.size());
  }
  for (const auto& n : input.notes) out += "<p class=\"note\">" + escape_xml(n) + "</p>\n";
  out += timeline(input);
  out +=
      "<table class=\"gates\"><tr><th>#</th><th>gate</th><th>status</th><th>attempts</th>"
      "<th>duration</th><th>note</th></tr>\n";
  for (const auto& g : input.gates) {
    const std::string status = status_class(g.record.status);
    out += fmt::format(
        "<tr><td>{}</td><td><a href=\"#gate-{}\">{}</a></td><td "
        "class=\"status {}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        g.index + 1, escape_xml(g.record.id), escape_xml(g.record.id), status, status,
        g.record.attempts, escape_xml(format_duration(g.duration_s())), escape_xml(g.record.note));
  }
  out += "</table>\n";
  for (const auto& g : input.gates) {
    if (card && g.index == card->gate_index) continue;  // shown above
    if (g.record.attempts > 0 || g.verdict) out += gate_section(g, reference);
  }
  return out + run_section(input) + "</body></html>\n";
}

}  // namespace bigmac::report
