#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gates/gate_verdict.h"
#include "report/line_printer.h"
#include "report/report_input.h"
#include "report/terminal_style.h"
#include "run/run_state.h"

namespace bigmac::report {

/// What the gate loop tells the user while it runs (ninja's Status). Call order per run:
/// run_started, then per gate gate_started → ranks_up (as ranks come up) → step (each step the
/// owner logs) and tick (every look of the watch loop) → gate_finished; message() and
/// detail() for any other line at any time; run_finished once at the end with the loaded report
/// input (prints the final block).
class Progress {
 public:
  virtual ~Progress() = default;

  /// What a gate launch looks like (number and totals for "gate 2/5", "step 7/20").
  struct GateStart {
    std::size_t number = 1;  ///< 1-based position in the run
    std::size_t total = 5;
    std::string id;
    int attempt = 1;
    int ranks = 1;               ///< ranks launched
    std::int64_t max_steps = 0;  ///< 0: unknown
  };

  virtual void run_started(const std::string& run_id, std::size_t gates) = 0;
  virtual void gate_started(const GateStart& gate) = 0;
  /// `up` ranks have come up (first output / pg_ready) out of the launched ones.
  virtual void ranks_up(int up) = 0;
  /// The owner logged `global_step`; `baseline_loss` is the baseline's at the same step.
  virtual void step(std::int64_t global_step, std::optional<double> loss,
                    std::optional<double> baseline_loss) = 0;
  /// The rank closest to its silence limit at one look of the watch loop.
  struct Silence {
    int rank = 0;
    double silent_s = 0;
    double limit_s = 0;
  };
  /// Called at every look of the watch loop (a few times a second, whether or not a line
  /// arrived), so the clock on screen runs on during a silence; nullopt when no rank runs under a
  /// limit.
  virtual void tick(const std::optional<Silence>& quietest) = 0;
  /// The gate ended with `verdict`; `note` says what else it did ("baseline recorded").
  virtual void gate_finished(const gates::GateVerdict& verdict, const std::string& note) = 0;
  /// A line that stays whatever the verbosity but quiet (a changed port, a warning).
  virtual void message(const std::string& text) = 0;
  /// A line or block shown only under -v (state transitions, every check, the mid-run
  /// diagnoses the final block repeats).
  virtual void detail(const std::string& text) = 0;
  /// `report_path` is the report to point at, as the user should type it ("" when none was
  /// written).
  virtual void run_finished(const ReportInput& input, const std::string& report_path) = 0;
};

/// How TerminalProgress prints: verbosity, colour, and the resume command as the user would
/// paste it ("build/bin/bigmac-bringup resume reports/20261202-071819"; empty: the card's own).
struct OutputStyle {
  Verbosity verbosity = Verbosity::kNormal;
  bool color = false;
  std::string resume_command;
};

/// Progress on a LinePrinter. On a terminal one overprinted status line that ticks on its own
///   [2/5] dp  ranks 4/4  step 7/20  loss 2.3412 (baseline 2.341)  12.4 s  silent 3.1 s / 5.0 s
/// and, per gate, one line that stays:
///   [2/5] dp      passed   4.7 s  13 checks, 3 unobservable
/// When not smart (pipe, --ci) the status line is not drawn; a plain copy of it is printed when
/// nothing was printed for a minute, so a long gate shows it is alive in a CI log. Under -v
/// also: every message of detail(), and, when not smart, the status line at the gate's start,
/// when all ranks are up and at tenths of max_steps. Under -q nothing but the final verdict.
/// `now_s` gives seconds on a monotonic clock (a fake in tests).
class TerminalProgress final : public Progress {
 public:
  TerminalProgress(LinePrinter& printer, std::function<double()> now_s, OutputStyle style = {});

  void run_started(const std::string& run_id, std::size_t gates) override;
  void gate_started(const GateStart& gate) override;
  void ranks_up(int up) override;
  void step(std::int64_t global_step, std::optional<double> loss,
            std::optional<double> baseline_loss) override;
  void tick(const std::optional<Silence>& quietest) override;
  void gate_finished(const gates::GateVerdict& verdict, const std::string& note) override;
  void message(const std::string& text) override;
  void detail(const std::string& text) override;
  void run_finished(const ReportInput& input, const std::string& report_path) override;

 private:
  std::string status_line() const;
  bool worth_a_plain_line(std::int64_t global_step) const;
  /// Draws the status line: overprinted on a terminal, else as a plain line (`plain`).
  void show_status(bool plain);
  void lasting(const std::string& text);

  LinePrinter& printer_;
  std::function<double()> now_s_;
  GateStart gate_;
  double gate_start_s_ = 0;
  int up_ = 0;
  std::optional<std::int64_t> step_;
  std::optional<double> loss_, baseline_loss_;
  std::optional<Silence> silence_;
  OutputStyle style_;
  double last_drawn_s_ = 0;    ///< when the status line was last overprinted
  double last_printed_s_ = 0;  ///< when a plain line was last printed
};

/// What a run prints last, failure first as in report.html: the verdict card of the failed
/// gate (symptom, evidence, cause, fix, go back to, the resume command) and the failing metric at
/// the steps around its first divergence, or the run's message when no gate failed; under -v
/// then one row per gate (number, id, status, duration, checks passed, first failed check), the
/// gates' notes and every unobservable check.
std::string format_final_block(const ReportInput& input, const OutputStyle& style = {});

/// The line a gate leaves: "[2/5] dp      passed   4.7 s  13 checks, 3 unobservable", or
/// "... FAILED   1.9 s  lr_vs_baseline: <its message>"; `note` is appended after "; ".
std::string format_gate_line(std::size_t number, std::size_t total, const gates::GateVerdict& v,
                             double duration_s, const std::string& note, bool color);

/// Checks no log could answer, over every gate of the run (the warnings of a passed run).
std::size_t count_unobservable(const ReportInput& input);

}  // namespace bigmac::report
