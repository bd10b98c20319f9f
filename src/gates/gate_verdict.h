#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "gates/check.h"
#include "gates/gate_evidence.h"
#include "gates/gate_plan.h"
#include "gates/gate_spec.h"

namespace bigmac::gates {

/// One field the trainer does not log and every check it left unobservable: one finding per
/// missing cause, however many checks need it.
struct UnobservableFinding {
  std::string field;                  ///< "grad_norm", "pg_ready" (gates/observability.h)
  std::string what_to_log;            ///< the one sentence of what to add
  std::vector<std::string> checks;    ///< the checks that could not be made, in spec order
  std::vector<std::string> required;  ///< those of them the gate requires (a failure)

  bool is_required(const std::string& check) const;
  /// "unobservable: the trainer logs no grad_norm; log the gradient norm of ..." for reports.
  std::string text() const;
};

/// The outcome of one gate: every check's result in spec order. A gate passes only when every
/// check that was made passed and every check it requires was made; a check with nothing to
/// compare fails. Checks the trainer's logs cannot answer are `unobservable`, not results.
struct GateVerdict {
  std::string gate_id;
  bool passed = false;
  std::vector<CheckResult> results;
  /// Checks not run and why ("loss_vs_baseline: no baseline yet; this run records one").
  std::vector<std::string> not_run;
  /// Checks that could not be made, one finding per field the trainer does not log.
  std::vector<UnobservableFinding> unobservable;
  std::string route_back;  ///< of the first failed check; empty on a pass
  /// "stopped early at step 1 of 20: lr_vs_baseline failed for good at step 0" when the ranks
  /// were stopped at a certain failure (gates/early_stop.h); empty when the gate ran out.
  std::string stopped_early;

  /// The failed check that names the gate's failure: the first in the gate's order, or for a gate
  /// stopped early the one certain at the earliest step.
  const CheckResult* first_failure() const;
  /// The passed checks that carry a warning, in the gate's order.
  std::vector<const CheckResult*> warnings() const;
  /// The first finding that leaves a required check unobservable, or nullptr.
  const UnobservableFinding* first_required_unobservable() const;
  /// One line: "dp passed (12 checks)" / "dp failed: check: msg" / "dp failed (stopped early at
  /// step 1 of 20: ...): check: msg".
  std::string summary() const;
};

/// Runs the spec's checks over the evidence. A check that reports missing fields joins the
/// finding of each field (required per gates::is_required). `reference` is the baseline (nullptr:
/// none yet; checks marked `when = "baseline"` are then listed in not_run instead of failing).
GateVerdict evaluate_gate(const GateSpec& spec, const GatePlan& plan, const GateEvidence& evidence,
                          const baseline::Baseline* reference);

/// The verdict for the terminal: each check with ✓/✗, its message and, for failures, evidence.
std::string format_verdict(const GateVerdict& verdict);

nlohmann::json to_json(const GateVerdict& verdict);
GateVerdict verdict_from_json(const nlohmann::json& json);

}  // namespace bigmac::gates
