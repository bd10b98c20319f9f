#include "report/progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/printable.h"
#include "report/failing_metric.h"
#include "report/markup_text.h"
#include "report/verdict_card.h"

namespace bigmac::report {

TerminalProgress::TerminalProgress(LinePrinter& printer, std::function<double()> now_s)
    : printer_(printer), now_s_(std::move(now_s)) {}

void TerminalProgress::run_started(const std::string& run_id, std::size_t gates) {
  printer_.print_on_new_line(fmt::format("bigmac-bringup run {}: {} gates", run_id, gates));
}

void TerminalProgress::gate_started(const GateStart& gate) {
  gate_ = gate;
  gate_start_s_ = now_s_();
  up_ = 0;
  step_.reset();
  loss_.reset();
  baseline_loss_.reset();
  printer_.print(status_line());
}

void TerminalProgress::ranks_up(int up) {
  if (up == up_) return;
  up_ = up;
  if (printer_.smart() || up_ >= gate_.ranks) printer_.print(status_line());
}

void TerminalProgress::step(std::int64_t global_step, std::optional<double> loss,
                            std::optional<double> baseline_loss) {
  step_ = global_step;
  loss_ = loss;
  baseline_loss_ = baseline_loss;
  if (printer_.smart() || worth_a_plain_line(global_step)) printer_.print(status_line());
}

void TerminalProgress::gate_finished(const std::string& id, gates::GateStatus status,
                                     const std::string& summary) {
  printer_.print(status_line());
  printer_.print_on_new_line(
      fmt::format("[{}/{}] {} {} in {}{}{}", gate_.number, gate_.total, id,
                  status == gates::GateStatus::kFailed ? "FAILED" : gates::status_name(status),
                  format_duration(now_s_() - gate_start_s_), summary.empty() ? "" : ": ", summary));
}

void TerminalProgress::message(const std::string& text) { printer_.print_on_new_line(text); }

void TerminalProgress::run_finished(const ReportInput& input) {
  printer_.print_on_new_line(format_final_block(input));
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
  return line + "  " + (elapsed > 0 ? format_duration(elapsed) : "0.0 s");
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

std::string card_block(const VerdictCard& card) {
  std::string out = (card.failed ? "FAILED " : "STOPPED: ") + card.headline + "\n";
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
  out += labelled("Resume", card.resume + "   (" + card.resume_note + ")");
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

std::string gate_table(const ReportInput& input) {
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
    } else if (g.record.status == gates::GateStatus::kFailed) {
      failure = g.record.note;
    }
    const std::string status = g.record.status == gates::GateStatus::kFailed
                                   ? "FAILED"
                                   : std::string(gates::status_name(g.record.status));
    std::string row =
        fmt::format("{:>2}  {:<{}}  {:<11}  {:>9}  {:>6}  {}", g.index + 1, g.record.id, id_width,
                    status, format_duration(g.duration_s()), checks, failure);
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
  }
  return out;
}

}  // namespace

std::string format_final_block(const ReportInput& input) {
  const baseline::Baseline* reference = input.baseline ? &*input.baseline : nullptr;
  std::string out;
  // Failure first, as in report.html and summary.md: the card, the failing metric, the gates.
  if (const auto card = verdict_card(input)) {
    out += card_block(*card) + "\n";
    const GateReport& gate = input.gates.at(card->gate_index);
    if (auto metric = failing_metric(gate, reference)) {
      out += metric_block(*metric, gate.record.id) + "\n";
    }
  } else if (!input.state.message.empty()) {
    out += input.state.message + "\n\n";
  }
  return out + gate_table(input);
}

}  // namespace bigmac::report
