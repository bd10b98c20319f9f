#include "trainer/fault_injector.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>

namespace bigmac::trainer {
namespace {

/// The hang faults: a real block in a system call, as a deadlocked rank would be. Only a signal
/// ends it (SIGTERM/SIGKILL keep their default action).
[[noreturn]] void block_forever() {
  for (;;) pause();
}

}  // namespace

void FaultInjector::before_rendezvous() const {
  if (plan_.hangs(at_.rank, -1)) block_forever();
}

void FaultInjector::at_step_start(int step) const {
  if (plan_.crashes(at_.rank, step)) std::abort();
  if (plan_.hangs(at_.rank, step)) block_forever();
  if (at_.stages > 1 && plan_.stalls(at_.stage, step)) block_forever();
}

void FaultInjector::before_world_reduce(RankGroup& group, int step) const {
  if (plan_.calls_extra_barrier(at_.rank, step)) group.barrier();
}

void FaultInjector::world_reduce_inputs(std::vector<at::Tensor>& reduced, int step) const {
  if (plan_.lengthens_reduce(at_.rank, step) && !reduced.empty()) {
    reduced.push_back(at::zeros({1}, reduced.back().options()));
  }
}

double FaultInjector::learning_rate(double lr) const {
  return plan_.lr_scale_by_world ? lr * at_.world_size : lr;
}

std::int64_t FaultInjector::micro_batch_samples(int mb, int micro_batches,
                                                std::int64_t micro) const {
  return plan_.ragged_microbatch && mb + 1 == micro_batches ? micro - 1 : micro;
}

at::Tensor FaultInjector::logits(at::Tensor logits, int step) const {
  if (step != plan_.nan_at_step) return logits;
  return logits + std::numeric_limits<double>::quiet_NaN();
}

void FaultInjector::gradients(const std::vector<at::Tensor>& params, int step) const {
  if (plan_.grad_blowup <= 0) return;
  const double factor = std::pow(plan_.grad_blowup, step);
  for (const auto& param : params) param.grad().mul_(factor);
}

int FaultInjector::step_log_copies(int step) const {
  if (step == plan_.skip_step_log) return 0;
  return step == plan_.dup_step_log ? 2 : 1;
}

at::Tensor FaultInjector::outgoing_activation(at::Tensor hidden) const {
  if (at_.stage != 0) return hidden;
  if (plan_.boundary_seq_trim > 0) {
    const std::int64_t seq = hidden.size(1);
    hidden = hidden.narrow(1, 0, std::max<std::int64_t>(0, seq - plan_.boundary_seq_trim));
  }
  if (!plan_.boundary_dtype.empty()) {
    hidden = hidden.to(plan_.boundary_dtype == "bf16" ? at::kBFloat16 : at::kHalf);
  }
  return hidden;
}

}  // namespace bigmac::trainer
