#pragma once

#include "gates/check.h"

namespace bigmac::gates {

/// Checks against the baseline and the model's structure.
/// `<metric>_policy` (exact|relative|magnitude), `<metric>_rel_tol`, `<metric>_abs_tol`,
/// `<metric>_factor`; on failure the route back is `<metric>_route_back_first_step` when the
/// very first step already differs, else `<metric>_route_back_later` (when set).
CheckResult check_loss_vs_baseline(const CheckContext& ctx);
CheckResult check_grad_norm_vs_baseline(const CheckContext& ctx);
CheckResult check_lr_vs_baseline(const CheckContext& ctx);
/// The whole-model count agrees across ranks, equals the sum of the stages (tied duplicates
/// subtracted and named) and the baseline's.
CheckResult check_param_count(const CheckContext& ctx);
/// The initial parameter digest agrees across ranks and with the baseline's.
CheckResult check_param_digest(const CheckContext& ctx);

}  // namespace bigmac::gates
