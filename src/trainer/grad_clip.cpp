#include "trainer/grad_clip.h"

#include <ATen/ATen.h>

#include <cmath>

namespace bigmac::trainer {

at::Tensor gradient_norm(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> norms;
  for (const auto& param : params) {
    if (param.grad().defined()) norms.push_back(param.grad().norm());
  }
  if (norms.empty()) return at::zeros({});
  return at::stack(norms).norm();
}

void clip_gradients(const std::vector<at::Tensor>& params, const at::Tensor& total_norm,
                    double max_norm) {
  if (!std::isfinite(max_norm) || max_norm <= 0) return;
  auto coefficient = at::clamp(max_norm / (total_norm + 1e-6), c10::nullopt, 1.0);
  for (const auto& param : params) {
    if (param.grad().defined()) param.grad().mul_(coefficient);
  }
}

}  // namespace bigmac::trainer
