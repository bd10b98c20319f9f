#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gates/run_state.h"
#include "report/line_printer.h"
#include "report/report_input.h"

namespace bigmac::report {

/// What the gate loop tells the user while it runs (ninja's Status). Call order per run:
/// run_started, then per gate gate_started → ranks_up (as ranks come up) → step (each step the
/// loss owner logs) → gate_finished; message() for any other line at any time; run_finished
/// once at the end with the loaded report input (prints the final block).
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
  /// The loss owner logged `global_step`; `baseline_loss` is the baseline's at the same step.
  virtual void step(std::int64_t global_step, std::optional<double> loss,
                    std::optional<double> baseline_loss) = 0;
  virtual void gate_finished(const std::string& id, gates::GateStatus status,
                             const std::string& summary) = 0;
  /// A line that stays (state transitions, warnings).
  virtual void message(const std::string& text) = 0;
  virtual void run_finished(const ReportInput& input) = 0;
};

/// Progress on a LinePrinter: one overprinted status line on a terminal
///   [2/5] dp  ranks 4/4  step 7/20  loss 2.3412 (baseline 2.341)  12.4 s
/// and, when not smart (pipe, --ci), plain lines: gate start, all ranks up, every step at
/// tenths of max_steps (and first and last), the gate's end. `now_s` gives seconds on a
/// monotonic clock (a fake in tests).
class TerminalProgress final : public Progress {
 public:
  TerminalProgress(LinePrinter& printer, std::function<double()> now_s);

  void run_started(const std::string& run_id, std::size_t gates) override;
  void gate_started(const GateStart& gate) override;
  void ranks_up(int up) override;
  void step(std::int64_t global_step, std::optional<double> loss,
            std::optional<double> baseline_loss) override;
  void gate_finished(const std::string& id, gates::GateStatus status,
                     const std::string& summary) override;
  void message(const std::string& text) override;
  void run_finished(const ReportInput& input) override;

 private:
  std::string status_line() const;
  bool worth_a_plain_line(std::int64_t global_step) const;

  LinePrinter& printer_;
  std::function<double()> now_s_;
  GateStart gate_;
  double gate_start_s_ = 0;
  int up_ = 0;
  std::optional<std::int64_t> step_;
  std::optional<double> loss_, baseline_loss_;
};

/// What a run prints last, failure first as in report.html: the verdict card of the failed
/// gate (symptom, evidence, cause, fix, go back to, the resume command), the failing metric at
/// the steps around its first divergence, then one row per gate (number, id, status, duration,
/// checks passed, first failed check) and the gates' notes.
std::string format_final_block(const ReportInput& input);

}  // namespace bigmac::report
