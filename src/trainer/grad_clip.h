#pragma once

#include <ATen/Tensor.h>

#include <vector>

namespace bigmac::trainer {

/// Total 2-norm of the gradients of `params` (0 when none has one), as a 0-dim tensor of their
/// dtype: the same arithmetic as torch.nn.utils.clip_grad_norm_, so the Python mirror in
/// bench/trainer computes the same numbers.
at::Tensor gradient_norm(const std::vector<at::Tensor>& params);

/// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), computed in total_norm's
/// dtype as clip_grad_norm_ does. The one clipping routine of the trainer: the single-process
/// path passes gradient_norm(params), the pipeline the norm over all its stages. Without a
/// limit (max_norm not finite or <= 0) the gradients are left as they are.
void clip_gradients(const std::vector<at::Tensor>& params, const at::Tensor& total_norm,
                    double max_norm);

}  // namespace bigmac::trainer
