#pragma once

#include <optional>
#include <string>

#include "gates/check.h"

namespace bigmac::gates {

/// Every data-parallel replica of a stage holds the same parameters after each digested step
/// (the probe's param_digest at steps 0, 1, 2, 4, ...): under data parallelism they must,
/// whatever the data order. Not applicable with one replica.
CheckResult check_replicas_in_sync(const CheckContext& ctx);

/// The replicas' buffers (BatchNorm running statistics, the probe's buffer_digest as the first
/// forward of a digest step read them) agree. Buffers apart while the parameters agree pass
/// with a warning, not a failure: training uses each batch's own statistics, but each replica
/// evaluates and checkpoints with statistics of its own. Not applicable where no rank logged a
/// buffer digest (the probe writes one only where the model has buffers) and where the
/// parameters differ (replicas_in_sync fails then).
CheckResult check_buffers_in_sync(const CheckContext& ctx);

/// No two replicas of a stage consumed the same first micro-batch in a step (the probe's
/// input_digest): each sample once, or the sampler is not sharded. Not applicable with one
/// replica.
CheckResult check_no_duplicate_samples(const CheckContext& ctx);

/// Every sample once: over the ranks that read input (one per replica of the first stage), each
/// step consumes as many samples as the baseline's step (bigmac-train's and the probe's sample
/// sets: a count and a sum of per-sample hashes). A different count fails (samples dropped or
/// added), certain at that step; the same samples pass ("the order does not depend on the
/// layout"); as many but other samples pass too, saying the order depends on the layout.
/// Unobservable when the ranks or the baseline log no sample sets.
CheckResult check_sample_coverage(const CheckContext& ctx);

/// What the evidence says of a gate's data order against the baseline's.
struct DataOrder {
  enum Kind {
    kUnknown,     ///< nothing proves it either way: compare step by step
    kStepByStep,  ///< the baseline's samples, or a fault its own check reports: step by step
    kBand,        ///< provably the layout's: compare as a band
    kPending,     ///< the ranks log the evidence, but not all of it is in yet
  };
  Kind kind = kUnknown;
  std::string why;  ///< kBand: the proof; kPending: what is still missing
};

/// Judges it: the initial parameters must be the baseline's and every replica stay in sync, no
/// two read the same micro-batch; then the sample sets decide (the baseline's samples: step by
/// step; as many, other ones: a band), or, without them, a step-0 loss that differs means the
/// samples differ by the layout alone (a DistributedSampler, a per-rank seed). One judgement
/// for the comparison checks and the report alike. kPending keeps a first-step difference from
/// being certain before the evidence that could change the policy has arrived.
DataOrder judge_data_order(const CheckContext& ctx);

/// judge_data_order's proof when it is kBand; nothing otherwise.
std::optional<std::string> layout_dependent_order(const CheckContext& ctx);

}  // namespace bigmac::gates
