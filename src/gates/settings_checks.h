#pragma once

#include "gates/check.h"

namespace bigmac::gates {

/// Every value the gate gave the trainer (world size, pp, tp, dp, micro-batch size,
/// accumulation, sequence length, split points, seed) equals what the ranks say they ran with
/// (`run`, `pg_ready`, `batch`, `layout` events). A mismatch names the value, what the gate
/// asked for, what the trainer ran with, where the value must be written (the configuration
/// layer of its consumer) and what may override it (audit::settings_applied_hint). Values no
/// rank reports are unobservable.
CheckResult check_settings_applied(const CheckContext& ctx);

}  // namespace bigmac::gates
