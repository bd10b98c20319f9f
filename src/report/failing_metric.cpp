#include "report/failing_metric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "baseline/comparison.h"
#include "report/markup_text.h"

namespace bigmac::report {
namespace {

std::optional<double> run_value(const logs::StepRecord& s, const std::string& metric) {
  if (metric == "loss") return s.loss;
  if (metric == "grad_norm") return s.grad_norm;
  if (metric == "lr") return s.lr;
  return std::nullopt;
}

std::optional<double> baseline_value(const baseline::BaselineStep& s, const std::string& metric) {
  if (metric == "loss") return s.loss;
  if (metric == "grad_norm") return s.grad_norm;
  if (metric == "lr") return s.lr;
  return std::nullopt;
}

/// The metric a check without a recorded divergence is about.
std::string metric_of_check(const std::string& check) {
  if (check.rfind("grad_norm", 0) == 0) return "grad_norm";
  if (check.rfind("lr_", 0) == 0) return "lr";
  return "loss";
}

}  // namespace

std::optional<std::pair<double, double>> FailingMetric::allowed(double baseline_value) const {
  if (!divergence) return std::nullopt;
  return baseline::tolerance_range(baseline_value, divergence->tolerance);
}

std::optional<double> FailingMetric::allowed_rel_diff(double baseline_value) const {
  if (!divergence || divergence->tolerance.policy != baseline::Policy::kRelative ||
      baseline_value == 0) {
    return std::nullopt;
  }
  const baseline::Tolerance& t = divergence->tolerance;
  return (t.rel_tol * std::fabs(baseline_value) + t.abs_tol) / std::fabs(baseline_value);
}

std::optional<std::size_t> FailingMetric::first_divergent_index() const {
  if (!divergence) return std::nullopt;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].step == divergence->step) return i;
  }
  return std::nullopt;
}

std::string FailingMetric::summary() const {
  if (divergence) {
    const gates::MetricDivergence& d = *divergence;
    return fmt::format(
        "{} first outside the tolerance ({}) at step {}: {} vs baseline {} (rel diff {})", metric,
        d.tolerance.describe(), d.step, format_value(d.observed), format_value(d.baseline),
        format_relative(baseline::relative_difference(d.observed, d.baseline)));
  }
  std::size_t logged = 0;
  const MetricStep* worst = nullptr;
  for (const MetricStep& s : steps) {
    if (!s.run) continue;
    ++logged;
    if (s.rel_diff && (!worst || *s.rel_diff > *worst->rel_diff)) worst = &s;
  }
  std::string out =
      fmt::format("{} over the {} logged step{}", metric, logged, logged == 1 ? "" : "s");
  if (worst) {
    out += fmt::format(", largest rel diff from the baseline {} at step {}",
                       format_relative(*worst->rel_diff), worst->step);
  }
  if (check.find("_vs_baseline") != std::string::npos) {
    return out + " (this verdict records no tolerance)";
  }
  return out + fmt::format("; what failed was {}, not a comparison with the baseline",
                           check.empty() ? "the gate" : check);
}

std::vector<std::size_t> FailingMetric::rows_to_show(std::size_t limit) const {
  if (steps.empty()) return {};
  const auto n = static_cast<std::ptrdiff_t>(steps.size());
  std::ptrdiff_t last_run = n - 1;
  while (last_run > 0 && !steps[static_cast<std::size_t>(last_run)].run) --last_run;
  std::vector<std::ptrdiff_t> wanted;
  if (auto d = first_divergent_index()) {
    const auto at = static_cast<std::ptrdiff_t>(*d);
    wanted = {at, at - 1, 0, at + 1, last_run, at - 2, at + 2, at + 3, at + 4, at + 5};
  } else {  // where the run stopped, and how it started
    wanted = {last_run, last_run - 1, 0, last_run - 2, 1, last_run - 3, last_run - 4, 2};
  }
  std::set<std::size_t> chosen;
  for (std::ptrdiff_t i : wanted) {
    if (chosen.size() >= limit) break;
    if (i >= 0 && i < n) chosen.insert(static_cast<std::size_t>(i));
  }
  return {chosen.begin(), chosen.end()};
}

std::optional<FailingMetric> failing_metric(const GateReport& gate,
                                            const baseline::Baseline* reference) {
  if (gate.record.status != run::GateStatus::kFailed) return std::nullopt;
  FailingMetric m;
  const gates::CheckResult* failed = gate.verdict ? gate.verdict->first_failure() : nullptr;
  m.check = failed ? failed->name : gate.record.failed_check;
  if (failed && failed->divergence) {
    m.divergence = failed->divergence;
    m.metric = failed->divergence->metric;
  } else {
    m.metric = metric_of_check(m.check);
  }
  std::map<std::int64_t, double> base;
  if (reference) {
    for (const auto& s : reference->steps) {
      if (auto v = baseline_value(s, m.metric)) base.emplace(s.global_step, *v);
    }
  }
  std::set<std::int64_t> seen;
  bool any_run_value = false;
  for (const logs::StepRecord& s : gate.steps) {
    const auto v = run_value(s, m.metric);
    // The first record of a step counts, as in the comparison the check made.
    if (!v || !seen.insert(s.global_step).second) continue;
    any_run_value = true;
    MetricStep row{s.global_step, v, std::nullopt, std::nullopt, std::nullopt};
    if (auto b = base.find(s.global_step); b != base.end()) {
      row.baseline = b->second;
      row.rel_diff = baseline::relative_difference(*v, b->second);
      if (m.divergence) {
        row.within = baseline::within_tolerance(*v, b->second, m.divergence->tolerance);
      }
    }
    m.steps.push_back(row);
  }
  if (!any_run_value) return std::nullopt;
  for (const auto& [step, value] : base) {  // steps the run never reached
    if (!seen.count(step)) m.steps.push_back({step, std::nullopt, value, std::nullopt, {}});
  }
  std::stable_sort(m.steps.begin(), m.steps.end(),
                   [](const MetricStep& a, const MetricStep& b) { return a.step < b.step; });
  return m;
}

}  // namespace bigmac::report
