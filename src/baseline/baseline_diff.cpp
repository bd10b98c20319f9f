#include "baseline/baseline_diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "baseline/regression.h"

namespace bigmac::baseline {

bool BaselineDiff::identical() const {
  if (!structure.empty() || !fingerprint.empty()) return false;
  for (const MetricComparison& m : metrics) {
    if (m.missing > 0 || (m.compared > 0 && !m.exact)) return false;
  }
  return true;
}

BaselineDiff diff_baselines(const Baseline& a, const Baseline& b) {
  BaselineDiff d;
  const Tolerance exact{Policy::kExact, 0, 0, 1};
  for (Metric m : {Metric::kLoss, Metric::kGradNorm, Metric::kLr, Metric::kSamplesPerStep}) {
    d.metrics.push_back(compare_metric(a, b, m, exact));
  }
  const Structure& x = a.structure;
  const Structure& y = b.structure;
  if (x.param_count != y.param_count) {
    d.structure.push_back(fmt::format("param_count {} vs {}", x.param_count.value_or(-1),
                                      y.param_count.value_or(-1)));
  }
  if (x.param_digest != y.param_digest)
    d.structure.push_back(fmt::format("param_digest {} vs {}", x.param_digest, y.param_digest));
  if (x.input_shape != y.input_shape) {
    d.structure.push_back(fmt::format("input_shape [{}] vs [{}]", fmt::join(x.input_shape, ","),
                                      fmt::join(y.input_shape, ",")));
  }
  if (x.input_dtype != y.input_dtype)
    d.structure.push_back(fmt::format("input_dtype {} vs {}", x.input_dtype, y.input_dtype));
  if (a.steps.size() != b.steps.size())
    d.structure.push_back(fmt::format("steps {} vs {}", a.steps.size(), b.steps.size()));
  d.fingerprint = fingerprint_difference(a.fingerprint, b.fingerprint);
  auto known = [](const std::string& v) { return v.empty() ? std::string("(not recorded)") : v; };
  d.recorded.push_back(
      fmt::format("commit {} → {}", known(a.recorded.commit), known(b.recorded.commit)));
  d.recorded.push_back(fmt::format("trainer digest {} → {}", known(a.recorded.trainer_digest),
                                   known(b.recorded.trainer_digest)));
  for (const InputChange& c : input_changes(a, b)) {
    if (c.what.rfind("config", 0) == 0) d.recorded.push_back(c.describe());
  }
  return d;
}

std::string format_diff(const BaselineDiff& d, const std::string& a_name,
                        const std::string& b_name) {
  std::string out =
      fmt::format("diff {} -> {}: {}\n", a_name, b_name, d.identical() ? "identical" : "different");
  for (const MetricComparison& m : d.metrics) {
    out += fmt::format("  {:<16} {:>3} steps  ", metric_name(m.metric), m.compared);
    if (m.compared == 0) {
      out += "nothing to compare\n";
      continue;
    }
    if (m.exact) {
      out += "equal";
    } else {
      out += fmt::format("first divergent step {}, max rel diff {:.3g} at step {}",
                         m.first_inexact_step.value_or(-1), m.max_rel_diff, m.max_rel_diff_step);
    }
    if (m.missing > 0) out += fmt::format(" ({} steps only in {})", m.missing, a_name);
    out += "\n";
  }
  for (const std::string& s : d.structure) out += "  structure: " + s + "\n";
  if (!d.fingerprint.empty()) out += "  fingerprint: " + d.fingerprint + "\n";
  for (const std::string& r : d.recorded) out += "  recorded: " + r + "\n";
  return out;
}

}  // namespace bigmac::baseline
