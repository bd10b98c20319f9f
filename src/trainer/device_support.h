#pragma once

namespace bigmac::trainer {

/// True when this LibTorch sees a CUDA device (never with Debian's CPU-only libtorch-dev).
bool cuda_available();

/// True when this build can create NCCL groups: a CUDA LibTorch with USE_C10D_NCCL, detected by
/// src/trainer/CMakeLists.txt.
bool nccl_compiled();

}  // namespace bigmac::trainer
