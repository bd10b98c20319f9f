#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "gates/check.h"
#include "logs/record.h"

namespace bigmac::gates {

/// Checks over the `step` and `batch` events: the training loop itself is sane.
CheckResult check_finite_loss(const CheckContext& ctx);
CheckResult check_grad_norm_nonzero(const CheckContext& ctx);
/// Fails when grad_norm grows by more than `grad_norm_growth_factor` for
/// `grad_norm_growth_steps` consecutive steps.
CheckResult check_grad_norm_stable(const CheckContext& ctx);
/// 0..N-1 with no gap or duplicate, N = the baseline's step count (else train.max_steps).
CheckResult check_step_sequence(const CheckContext& ctx);
/// Logged = micro × accum × dp, equal to the plan's and the baseline's; says what to change.
CheckResult check_samples_per_step(const CheckContext& ctx);
/// What to change when a rank ran `b` against `want` samples/step under the gate's effective
/// configuration `config`: what the program model says (a value the program never receives,
/// a batch or accumulation it divides by the world size itself), else the value to set. The
/// check and the diagnosis both word it from here.
std::string samples_per_step_fix(const config::Config& config, const logs::BatchRecord& b,
                                 std::int64_t want);
/// Every rank logged `required_events`; the owner's steps carry `required_step_fields`.
CheckResult check_fields_present(const CheckContext& ctx);

}  // namespace bigmac::gates
