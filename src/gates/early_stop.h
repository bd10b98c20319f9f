#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "baseline/baseline.h"
#include "gates/gate_evidence.h"
#include "gates/gate_plan.h"
#include "gates/gate_spec.h"
#include "gates/gate_verdict.h"

namespace bigmac::gates {

/// A gate failure that no later record can undo, found while the gate still runs.
struct CertainFailure {
  std::string check;      ///< "lr_vs_baseline"
  std::int64_t step = 0;  ///< the step since which it is certain (-1: before the first step)
  std::string message;    ///< the check's message on the records so far
};

/// Whether the gate is stopped at its first certain failure: `[params] stop_on_divergence`
/// (per gate file, `[gates.<id>] stop_on_divergence` in a config), true when absent.
bool stops_on_divergence(const GateSpec& spec);

/// The decision, on the records a running gate has logged so far: the check whose failure is
/// already certain at the earliest step (the gate's order among equals) — a baseline comparison whose policy says no
/// later step can undo it, a step logged twice or out of order, a wrong samples/step, and any
/// failure a logged record proves for good (a layout, a parameter count or digest, a shape, a
/// loss on a middle stage, a second checkpoint writer) — or nullopt. Checks that fail only
/// because the run is not over yet (missing steps, no `done`, ranks still running, a stage
/// whose layout has not arrived) never count. Pure.
std::optional<CertainFailure> certain_failure(const GateSpec& spec, const GatePlan& plan,
                                              const GateEvidence& so_far,
                                              const baseline::Baseline* reference);

/// The verdict of a gate whose ranks were stopped at `cause`: `evaluated` (evaluate_gate on the
/// records as they were when the ranks had stopped) with "stopped early at step k of N" and,
/// since the run was cut short, every failure that is not certain moved to `not_run` as not
/// judged — unless none is certain any more, then they all stand.
GateVerdict judge_stopped_early(GateVerdict evaluated, const CertainFailure& cause,
                                const GateEvidence& evidence, const GatePlan& plan,
                                const baseline::Baseline* reference);

}  // namespace bigmac::gates
