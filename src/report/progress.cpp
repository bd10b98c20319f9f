#include "report/progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/printable.h"
#include "report/failing_metric.h"
#include "report/markup_text.h"
#include "report/verdict_card.h"

namespace bigmac::report {

TerminalProgress::TerminalProgress(LinePrinter& printer, std::function<double()> now_s,
                                   OutputStyle style)
    : printer_(printer), now_s_(std::move(now_s)), style_(std::move(style)) {
  last_printed_s_ = now_s_();
}

void TerminalProgress::lasting(const std::string& text) {
  printer_.print_on_new_line(text);
  last_printed_s_ = now_s_();
}

void TerminalProgress::show_status(bool plain) {
  if (style_.verbosity == Verbosity::kQuiet) return;
  if (printer_.smart()) {
    printer_.print(status_line());
    last_drawn_s_ = now_s_();
  } else if (plain) {
    printer_.print(status_line());
    last_printed_s_ = now_s_();
  }
}

void TerminalProgress::run_started(const std::string& run_id, std::size_t gates) {
  detail(fmt::format("bigmac-bringup run {}: {} gates", run_id, gates));
}

void TerminalProgress::gate_started(const GateStart& gate) {
  gate_ = gate;
  gate_start_s_ = now_s_();
  up_ = 0;
  step_.reset();
  loss_.reset();
  baseline_loss_.reset();
  silence_.reset();
  show_status(style_.verbosity == Verbosity::kVerbose);
}

void TerminalProgress::ranks_up(int up) {
  if (up == up_) return;
  up_ = up;
  show_status(style_.verbosity == Verbosity::kVerbose && up_ >= gate_.ranks);
}

void TerminalProgress::step(std::int64_t global_step, std::optional<double> loss,
                            std::optional<double> baseline_loss) {
  step_ = global_step;
  loss_ = loss;
  baseline_loss_ = baseline_loss;
  silence_.reset();
  show_status(style_.verbosity == Verbosity::kVerbose && worth_a_plain_line(global_step));
}

void TerminalProgress::tick(const std::optional<Silence>& quietest) {
  silence_ = quietest;
  const double now = now_s_();
  if (printer_.smart()) {
    // Ten frames a second at most: the clock runs, the terminal is not flooded.
    if (now - last_drawn_s_ >= 0.1) show_status(false);
  } else if (now - last_printed_s_ >= 60) {
    // A CI log that shows nothing for minutes looks hung (and some CI systems kill it).
    show_status(true);
  }
}

void TerminalProgress::gate_finished(const gates::GateVerdict& verdict, const std::string& note) {
  if (style_.verbosity == Verbosity::kQuiet) return;
  lasting(format_gate_line(gate_.number, gate_.total, verdict, now_s_() - gate_start_s_, note,
                           style_.color));
  // A warning is read where the gate's line is, whatever the verbosity but quiet.
  for (const gates::CheckResult* w : verdict.warnings()) {
    lasting(
        paint(printable("  warning: " + w->name + ": " + w->warning), Paint::kWarn, style_.color));
  }
}

void TerminalProgress::message(const std::string& text) {
  if (style_.verbosity != Verbosity::kQuiet) lasting(text);
}

void TerminalProgress::detail(const std::string& text) {
  if (style_.verbosity == Verbosity::kVerbose) lasting(paint_check_lines(text, style_.color));
}

void TerminalProgress::run_finished(const ReportInput& input, const std::string& report_path) {
  std::string text = format_final_block(input, style_);
  if (!report_path.empty()) {
    const bool no_card = !verdict_card(input);
    std::string line = "report: " + report_path;
    // A run without a failure says its result on the report's line: one line, not two.
    if (no_card && style_.verbosity != Verbosity::kVerbose) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      if (text.empty()) {
        const int passed = input.count(run::GateStatus::kPassed);
        text = fmt::format("{} gate{} passed", passed, passed == 1 ? "" : "s");
      }
      const std::size_t unobservable = count_unobservable(input);
      std::size_t warnings = 0;
      for (const GateReport& g : input.gates)
        warnings += g.verdict ? g.verdict->warnings().size() : 0;
      line = text + "; " + line;
      std::vector<std::string> listed;
      if (unobservable > 0) {
        listed.push_back(
            fmt::format("{} check{} unobservable", unobservable, unobservable == 1 ? "" : "s"));
      }
      if (warnings > 0)
        listed.push_back(fmt::format("{} warning{}", warnings, warnings == 1 ? "" : "s"));
      if (!listed.empty()) {
        line += fmt::format(" ({}: listed there and with -v)", fmt::join(listed, ", "));
      }
      text.clear();
    }
    text += line + "\n";
  }
  lasting(text);
}

std::string TerminalProgress::status_line() const {
  std::string line = fmt::format("[{}/{}] {}", gate_.number, gate_.total, gate_.id);
  if (gate_.attempt > 1) line += fmt::format(" (attempt {})", gate_.attempt);
  line += fmt::format("  ranks {}/{}", up_, gate_.ranks);
  if (step_) {
    // Steps are 0-based in the log; people count the step done, so show global_step + 1.
    line += gate_.max_steps > 0 ? fmt::format("  step {}/{}", *step_ + 1, gate_.max_steps)
                                : fmt::format("  step {}", *step_ + 1);
  }
  if (loss_) {
    line += "  loss " + format_value(*loss_);
    if (baseline_loss_) line += " (baseline " + format_value(*baseline_loss_) + ")";
  }
  const double elapsed = now_s_() - gate_start_s_;
  line += "  " + (elapsed > 0 ? format_duration(elapsed) : std::string("0.0 s"));
  // A second of silence is worth showing: the wait is measured against the limit that ends it.
  if (silence_ && silence_->silent_s >= 1.0) {
    line += fmt::format("  silent {:.1f} s / {:.1f} s", silence_->silent_s, silence_->limit_s);
    if (gate_.ranks > 1) line += fmt::format(" (rank {})", silence_->rank);
  }
  return line;
}

bool TerminalProgress::worth_a_plain_line(std::int64_t global_step) const {
  if (gate_.max_steps <= 0) return true;
  const std::int64_t every = std::max<std::int64_t>(1, gate_.max_steps / 10);
  // No global_step + 1: a log may claim step INT64_MAX.
  return global_step == 0 || global_step == gate_.max_steps - 1 || global_step % every == every - 1;
}

namespace {

/// "Label:      text", continuation lines indented under the text. Each line is printed with
/// its control characters escaped: evidence and messages quote the ranks' own output.
std::string labelled(std::string_view label, std::string_view text) {
  constexpr std::size_t kWidth = 12;
  std::string out = fmt::format("{:<{}}", std::string(label) + ":", kWidth);
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n')) {
    out += printable(text.substr(0, nl)) + "\n" + std::string(kWidth, ' ');
    text.remove_prefix(nl + 1);
  }
  return out + printable(text) + "\n";
}

std::string card_block(const VerdictCard& card, const OutputStyle& style) {
  std::string out = paint(card.failed ? "FAILED " : "STOPPED: ", Paint::kFail, style.color) +
                    paint(card.headline, Paint::kBold, style.color) + "\n";
  if (!card.check_message.empty() && card.check_message != card.symptom) {
    out += "  " + printable(card.check_message) + "\n";
  }
  out += labelled("Symptom", card.symptom);
  std::string evidence;
  for (const auto& line : card.evidence) evidence += (evidence.empty() ? "" : "\n") + line;
  if (!evidence.empty()) out += labelled("Evidence", evidence);
  out += labelled("Cause", card.cause);
  out += labelled("Fix", card.fix);
  out += labelled("Go back to", card.go_back_to.empty() ? "(unknown)" : card.go_back_to);
  const std::string& resume = style.resume_command.empty() ? card.resume : style.resume_command;
  out += labelled("Resume", resume + "   (" + card.resume_note + ")");
  for (const auto& other : card.other_diagnoses) out += labelled("Also likely", other);
  return out;
}

std::string metric_block(const FailingMetric& m, const std::string& gate_id) {
  std::string out = m.summary() + "\n";
  const std::size_t width = std::max<std::size_t>(9, gate_id.size());
  out += fmt::format("  {:>6}  {:>{}}  {:>9}  {:>8}\n", "step", gate_id, width, "baseline",
                     "rel diff");
  const auto first = m.first_divergent_index();
  const auto rows = m.rows_to_show();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (k > 0 && rows[k] > rows[k - 1] + 1) out += fmt::format("  {:>6}\n", "...");
    const MetricStep& s = m.steps[rows[k]];
    std::string mark;
    if (s.within) mark = *s.within ? "ok" : "OUT";
    if (first && rows[k] == *first) mark += "  <- first divergent step";
    if (!s.run) mark = "not reached";
    out += fmt::format("  {:>6}  {:>{}}  {:>9}  {:>8}  {}\n", s.step,
                       s.run ? format_value(*s.run) : "-", width,
                       s.baseline ? format_value(*s.baseline) : "-",
                       s.rel_diff ? format_relative(*s.rel_diff) : "-", mark);
  }
  return out;
}

std::string gate_table(const ReportInput& input, bool color) {
  std::size_t id_width = 4;
  for (const auto& g : input.gates) id_width = std::max(id_width, g.record.id.size());
  std::string out = fmt::format("{:>2}  {:<{}}  {:<11}  {:>9}  {:>6}  {}\n", "#", "gate", id_width,
                                "status", "duration", "checks", "first failure");
  for (const auto& g : input.gates) {
    std::string checks = "-", failure;
    if (g.verdict) {
      const auto passed = std::count_if(g.verdict->results.begin(), g.verdict->results.end(),
                                        [](const auto& r) { return r.passed; });
      checks = fmt::format("{}/{}", passed, g.verdict->results.size());
      if (const auto* f = g.verdict->first_failure()) {
        failure = f->name;
      } else if (const auto* u = g.verdict->first_required_unobservable()) {
        failure = u->required.front() + " (unobservable)";
      }
    } else if (g.record.status == run::GateStatus::kFailed) {
      failure = g.record.note;
    }
    const std::string status = g.record.status == run::GateStatus::kFailed
                                   ? "FAILED"
                                   : std::string(run::status_name(g.record.status));
    // Padded before it is painted: colour codes take no columns.
    const std::string padded = fmt::format("{:<11}", status);
    std::string row =
        fmt::format("{:>2}  {:<{}}  {}{}  {:>9}  {:>6}  {}", g.index + 1, g.record.id, id_width,
                    paint_status_word(status, color), padded.substr(status.size()),
                    format_duration(g.duration_s()), checks, failure);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }
  for (const auto& g : input.gates) {
    for (const auto& n : g.notes) out += fmt::format("note ({}): {}\n", g.record.id, n);
    if (!g.verdict) continue;
    for (const auto& u : g.verdict->unobservable) {
      out += fmt::format("{} ({}): {} — {}\n", u.required.empty() ? "warning" : "FAILED",
                         g.record.id, fmt::join(u.checks, ", "), u.text());
    }
    for (const gates::CheckResult* w : g.verdict->warnings()) {
      out += fmt::format("warning ({}): {} — {}\n", g.record.id, w->name, w->warning);
    }
  }
  return out;
}

}  // namespace

std::string format_final_block(const ReportInput& input, const OutputStyle& style) {
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  const bool verbose = style.verbosity == Verbosity::kVerbose;
  std::string out;
  // Failure first, as in report.html and summary.md: the card, the failing metric, the gates.
  if (const auto card = verdict_card(input)) {
    out += card_block(*card, style);
    const GateReport& gate = input.gates.at(card->gate_index);
    if (auto metric = failing_metric(gate, reference);
        metric && style.verbosity != Verbosity::kQuiet) {
      out += "\n" + metric_block(*metric, gate.record.id);
    }
  } else if (!input.state.message.empty()) {
    out += input.state.message + "\n";
  }
  if (!verbose) return out;
  return out + "\n" + gate_table(input, style.color);
}

std::string format_gate_line(std::size_t number, std::size_t total, const gates::GateVerdict& v,
                             double duration_s, const std::string& note, bool color) {
  const std::string status = v.passed ? "passed" : "FAILED";
  std::string what;
  if (v.passed) {
    what = fmt::format("{} check{}", v.results.size(), v.results.size() == 1 ? "" : "s");
    if (!v.unobservable.empty()) {
      what +=
          ", " + paint(fmt::format("{} unobservable", v.unobservable.size()), Paint::kWarn, color);
    }
    if (const std::size_t n = v.warnings().size(); n > 0) {
      what += ", " + paint(fmt::format("{} warning{}", n, n == 1 ? "" : "s"), Paint::kWarn, color);
    }
  } else if (const gates::CheckResult* f = v.first_failure()) {
    what = printable(f->name + ": " + f->message.substr(0, f->message.find('\n')));
  } else {
    // No failed check: a required check no log answers, or a gate stopped before any check.
    const std::string summary = v.summary();
    const std::string prefix = v.gate_id + " failed";
    what = summary.rfind(prefix, 0) == 0 ? summary.substr(prefix.size()) : summary;
    while (!what.empty() && (what.front() == ':' || what.front() == ' ')) what.erase(0, 1);
    what = printable(what);
  }
  // A gate stopped before its last step says so: the verdict came early, not from a hang.
  if (!v.stopped_early.empty() && what.find(v.stopped_early) == std::string::npos) {
    what += "; " + printable(v.stopped_early);
  }
  if (!note.empty()) what += "; " + printable(note);
  return fmt::format("[{}/{}] {:<6}  {}  {:>7}  {}", number, total, v.gate_id,
                     paint_status_word(status, color), format_duration(duration_s), what);
}

std::size_t count_unobservable(const ReportInput& input) {
  std::size_t n = 0;
  for (const GateReport& g : input.gates) {
    if (g.verdict) n += g.verdict->unobservable.size();
  }
  return n;
}

}  // namespace bigmac::report
