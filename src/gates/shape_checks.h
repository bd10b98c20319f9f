#pragma once

#include "gates/check.h"

namespace bigmac::gates {

/// Checks over traced tensor shapes (`shape` and `loss` events, trace.shapes = true).
/// hidden_states leaving stage k (exit/send) has the shape and dtype entering stage k+1
/// (enter/recv), per step and micro-batch.
CheckResult check_shape_chain(const CheckContext& ctx);
/// Dimension 1 of every traced tensor (and the batch's seq_length) equals train.seq_length.
CheckResult check_fixed_seq_length(const CheckContext& ctx);
/// Labels appear only on the last stage, each matching its logits' batch and sequence dims.
CheckResult check_labels_last_stage_only(const CheckContext& ctx);
/// Only the last stage logs `loss` events.
CheckResult check_no_middle_stage_loss(const CheckContext& ctx);

}  // namespace bigmac::gates
