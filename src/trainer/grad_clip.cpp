#include "trainer/grad_clip.h"

#include <ATen/ATen.h>

namespace bigmac::trainer {

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> norms;
  for (const auto& param : params) {
    if (param.grad().defined()) norms.push_back(param.grad().norm());
  }
  if (norms.empty()) return 0.0;
  auto total = at::stack(norms).norm();
  auto coefficient = at::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (const auto& param : params) {
    if (param.grad().defined()) param.grad().mul_(coefficient);
  }
  return total.item<double>();
}

}  // namespace bigmac::trainer
