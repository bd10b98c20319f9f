#include "trainer/device_support.h"

#include <torch/cuda.h>

namespace bigmac::trainer {

bool cuda_available() { return torch::cuda::is_available(); }

bool nccl_compiled() {
#ifdef BIGMAC_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

bool gloo_compiled() {
#ifdef BIGMAC_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

std::string compiled_backends() {
  std::string names;
  if (gloo_compiled()) names = "gloo";
  if (nccl_compiled()) names += names.empty() ? "nccl" : " nccl";
  return names.empty() ? "none" : names;
}

}  // namespace bigmac::trainer
