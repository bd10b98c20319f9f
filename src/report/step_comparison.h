#pragma once

#include <cstdint>
#include <optional>

#include "baseline/baseline.h"
#include "report/report_input.h"

namespace bigmac::report {

/// How far a gate's logged steps are from the baseline's, step by step (for the reports; the
/// pass/fail decision is the gate's loss_vs_baseline check, not this).
struct StepComparison {
  std::int64_t steps = 0;     ///< steps the gate logged
  std::int64_t compared = 0;  ///< of those, steps the baseline also has with a loss
  std::optional<double> last_loss;
  std::optional<double> baseline_last_loss;  ///< at the gate's last step
  double max_abs_loss_diff = 0;
  std::optional<std::int64_t> max_diff_step;
  std::int64_t non_finite = 0;  ///< steps whose loss is NaN or infinite
};

StepComparison compare_steps(const GateReport& gate, const baseline::Baseline* reference);

/// The baseline's loss at `global_step`, if it has one.
std::optional<double> baseline_loss_at(const baseline::Baseline* reference, std::int64_t step);

}  // namespace bigmac::report
