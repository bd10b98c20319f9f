#pragma once

#include <string>

namespace bigmac::trainer {

/// True when this LibTorch sees a CUDA device (never with Debian's CPU-only libtorch-dev).
bool cuda_available();

/// True when this build can create NCCL groups: a CUDA LibTorch with USE_C10D_NCCL, detected by
/// src/trainer/CMakeLists.txt.
bool nccl_compiled();

/// True when this build can create Gloo groups: Gloo's headers were found beside LibTorch's
/// (Debian's libgloo-dev; a PyTorch wheel lacks them).
bool gloo_compiled();

/// The process-group backends this build can create, as `--version` prints them: "gloo nccl",
/// "gloo", "nccl" or "none".
std::string compiled_backends();

}  // namespace bigmac::trainer
