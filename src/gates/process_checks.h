#pragma once

#include "gates/check.h"

namespace bigmac::gates {

/// Checks over how the rank processes behaved as a group.
/// Every planned rank exited 0, no signal, no stall (with its last output lines as evidence).
CheckResult check_exit_status(const CheckContext& ctx);
/// Every planned rank logged `pg_ready` with the planned world size.
CheckResult check_process_group_formed(const CheckContext& ctx);
/// Exactly one rank logged `ckpt` events.
CheckResult check_single_checkpoint_writer(const CheckContext& ctx);
/// No rank went longer than `idle_limit_s` between two signs of work (heartbeat, mb, step).
CheckResult check_no_idle_stage(const CheckContext& ctx);

/// No rank resumed a checkpoint an earlier gate of the run wrote (the probe's `load` events
/// against the earlier attempts' `ckpt` paths): every gate starts fresh, or it compares a
/// continuation with the baseline's first steps.
CheckResult check_fresh_start(const CheckContext& ctx);

}  // namespace bigmac::gates
