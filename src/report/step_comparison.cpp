#include "report/step_comparison.h"

#include <cmath>

namespace bigmac::report {

std::optional<double> baseline_loss_at(const baseline::Baseline* reference, std::int64_t step) {
  if (!reference) return std::nullopt;
  for (const auto& s : reference->steps) {
    if (s.global_step == step) return s.loss;
  }
  return std::nullopt;
}

StepComparison compare_steps(const GateReport& gate, const baseline::Baseline* reference) {
  StepComparison c;
  c.steps = static_cast<std::int64_t>(gate.steps.size());
  for (const auto& step : gate.steps) {
    if (!step.loss) continue;
    c.last_loss = step.loss;
    c.baseline_last_loss = baseline_loss_at(reference, step.global_step);
    if (!std::isfinite(*step.loss)) {
      ++c.non_finite;
      continue;
    }
    if (!c.baseline_last_loss) continue;
    ++c.compared;
    const double diff = std::fabs(*step.loss - *c.baseline_last_loss);
    if (!c.max_diff_step || diff > c.max_abs_loss_diff) {
      c.max_abs_loss_diff = diff;
      c.max_diff_step = step.global_step;
    }
  }
  return c;
}

}  // namespace bigmac::report
