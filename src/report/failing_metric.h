#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baseline/baseline.h"
#include "gates/check.h"
#include "report/report_input.h"

namespace bigmac::report {

/// One step of the failing metric: the run's value beside the baseline's.
struct MetricStep {
  std::int64_t step = 0;
  std::optional<double> run;
  std::optional<double> baseline;
  /// |run - baseline| / |baseline| when both are there (infinite when one is not finite).
  std::optional<double> rel_diff;
  /// Whether the tolerance accepts run against baseline; empty when not compared.
  std::optional<bool> within;
};

/// What a failed gate's first failed check is about, against the baseline, ready to draw:
/// the metric, each step's values, and (when the check compared with the baseline) the
/// tolerance and the first step outside it, as the verdict recorded them.
struct FailingMetric {
  std::string check;   ///< the failed check ("loss_vs_baseline", "exit_status", ...)
  std::string metric;  ///< "loss", "grad_norm" or "lr"
  std::optional<gates::MetricDivergence> divergence;
  std::vector<MetricStep> steps;  ///< the run's steps in log order, then baseline-only steps

  /// The values the tolerance accepts at a baseline value; empty without a divergence.
  std::optional<std::pair<double, double>> allowed(double baseline_value) const;
  /// The largest relative difference the tolerance accepts there (relative policy only).
  std::optional<double> allowed_rel_diff(double baseline_value) const;
  /// Index into `steps` of the first divergent step, if the verdict named one.
  std::optional<std::size_t> first_divergent_index() const;
  /// One sentence: where the metric left the tolerance, or how far it got and how close it was.
  std::string summary() const;
  /// Up to `limit` indices into `steps` worth a text table: the first step, the two before
  /// the divergence, the divergent step and the ones after it, the last step; in step order.
  std::vector<std::size_t> rows_to_show(std::size_t limit = 8) const;
};

/// The failing metric of a failed gate; empty when the gate did not fail or logged no value
/// of that metric. The metric is the one the verdict's divergence names, else the one the
/// failed check is about (grad_norm_*, lr_*), else the loss, so a crash or hang still shows
/// how far training got.
std::optional<FailingMetric> failing_metric(const GateReport& gate,
                                            const baseline::Baseline* reference);

}  // namespace bigmac::report
