#pragma once

#include <ATen/Tensor.h>

#include <vector>

namespace bigmac::trainer {

/// Total 2-norm of the gradients, then scales them to at most `max_norm` (infinity: no clipping)
/// — the same arithmetic as torch.nn.utils.clip_grad_norm_, so the Python mirror in
/// bench/trainer computes the same numbers. Returns the norm before clipping.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace bigmac::trainer
