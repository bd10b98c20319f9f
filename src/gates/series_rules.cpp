#include "gates/series_rules.h"

#include <string>

#include "baseline/progress.h"

namespace bigmac::gates {

baseline::GrowthRule growth_rule(const CheckParams& params) {
  baseline::GrowthRule rule;
  rule.factor = params.number("grad_norm_growth_factor", rule.factor);
  rule.steps = static_cast<int>(params.number("grad_norm_growth_steps", rule.steps));
  return rule;
}

baseline::Tolerance metric_tolerance(const CheckParams& params, baseline::Metric metric) {
  const std::string prefix(baseline::metric_name(metric));
  baseline::Tolerance t = baseline::default_tolerance(metric);
  auto policy = baseline::parse_policy(params.text(prefix + "_policy", ""));
  if (policy) t.policy = *policy;
  t.rel_tol = params.number(prefix + "_rel_tol", t.rel_tol);
  t.abs_tol = params.number(prefix + "_abs_tol", t.abs_tol);
  t.factor = params.number(prefix + "_factor", t.factor);
  t.band.window = static_cast<int>(params.number(prefix + "_band_window", t.band.window));
  t.band.sigmas = params.number(prefix + "_band_sigmas", t.band.sigmas);
  t.band.confirm = static_cast<int>(params.number(prefix + "_band_confirm", t.band.confirm));
  return t;
}

double idle_limit(const CheckParams& params) {
  return params.number("idle_limit_s", baseline::kDefaultIdleLimitS);
}

}  // namespace bigmac::gates
