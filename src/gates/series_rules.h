#pragma once

#include "baseline/comparison.h"
#include "baseline/step_series.h"
#include "gates/check.h"

namespace bigmac::gates {

// The step-series rules a gate's [params] set (stages/0N-*.toml): its checks judge with them,
// and the diagnosis of a failed gate is handed the same ones (attempt/attempt_verdict.cpp).

/// grad_norm_growth_factor / grad_norm_growth_steps.
baseline::GrowthRule growth_rule(const CheckParams& params);

/// <metric>_policy, _rel_tol, _abs_tol, _factor, _band_window, _band_sigmas, _band_confirm; the
/// default relative tolerance per metric is loss 1e-4, grad_norm 1e-3, lr 1e-9.
baseline::Tolerance metric_tolerance(const CheckParams& params, baseline::Metric metric);

/// idle_limit_s: the longest pause between two signs of work of a rank (baseline/progress.h).
double idle_limit(const CheckParams& params);

}  // namespace bigmac::gates
