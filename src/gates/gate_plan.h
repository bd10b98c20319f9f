#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/error.h"
#include "gates/gate_spec.h"

namespace bigmac::gates {

/// One gate made concrete: the effective configuration its ranks run with. The launcher turns
/// it into processes; the checks read their expectations from it.
struct GatePlan {
  std::string gate_id;
  config::Config config;              ///< effective: nproc, pp, accum/micro rescaled, tracing
  int nproc = 1;                      ///< = config.derived.world_size
  std::int64_t samples_per_step = 0;  ///< micro × accum × dp, equal to the reference
  std::string rescaled;               ///< "train.gradient_accumulation_steps 4 -> 1", or empty
  /// Every configuration value this gate reads ("train.seed" -> "1234"), plus the gate's own
  /// launch and check parameters ("gate.loss_rel_tol" -> "0.0001"). A change invalidates a pass.
  std::map<std::string, std::string> inputs;
  std::string inputs_digest;  ///< digest of `inputs`
};

/// Derives a gate's effective configuration from the user's `base` config and the gate spec
/// (overrides already applied). `reference_samples` is the baseline's samples/step; without it
/// the single-process value micro × accum of `base` is the reference. When samples/step cannot
/// be conserved exactly the error says which value to change to what.
Expected<GatePlan> plan_gate(const GateSpec& spec, const config::Config& base,
                             std::optional<std::int64_t> reference_samples = std::nullopt);

/// Human-readable plan: process count, layout and batch arithmetic, one gate per block.
std::string format_plan(const GatePlan& plan);

}  // namespace bigmac::gates
