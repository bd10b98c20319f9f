#pragma once

#include <optional>
#include <string>

#include "gates/check.h"

namespace bigmac::gates {

/// Every data-parallel replica of a stage holds the same parameters after each digested step
/// (the probe's param_digest at steps 0, 1, 2, 4, ...): under data parallelism they must,
/// whatever the data order. Not applicable with one replica.
CheckResult check_replicas_in_sync(const CheckContext& ctx);

/// No two replicas of a stage consumed the same first micro-batch in a step (the probe's
/// input_digest): each sample once, or the sampler is not sharded. Not applicable with one
/// replica.
CheckResult check_no_duplicate_samples(const CheckContext& ctx);

/// Why the data order of this gate provably differs from the baseline's, or nothing: the
/// initial parameters are the baseline's, every replica stays in sync, no two read the same
/// micro-batch, and yet the step-0 loss differs. Then the samples differ by the layout alone (a
/// DistributedSampler, a per-rank seed), and a step-by-step comparison cannot hold: policy
/// "auto" compares as a band. One judgement for the comparison checks and the report alike.
std::optional<std::string> layout_dependent_order(const CheckContext& ctx);

}  // namespace bigmac::gates
