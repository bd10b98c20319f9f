#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/comparison.h"
#include "gates/gate_evidence.h"
#include "gates/gate_plan.h"

namespace bigmac::gates {

/// One line of evidence behind a check result: which rank, which log line, what it said.
struct CheckEvidence {
  int rank = -1;
  std::int64_t line = 0;
  std::string text;
};

/// Where a per-step metric left the baseline's tolerance, as numbers: the reports draw the
/// metric, its tolerance band and this step from it instead of re-reading the message.
struct MetricDivergence {
  std::string metric;     ///< baseline::metric_name: "loss", "grad_norm", "lr"
  std::int64_t step = 0;  ///< first step outside the tolerance
  double observed = 0;
  double baseline = 0;
  baseline::Tolerance tolerance;
};

/// A field or event a check needs that the trainer did not log at all (gates/observability.h):
/// the check could not be made. `field` names the cause ("grad_norm", "pg_ready"), so checks
/// that need the same field make one finding.
struct MissingField {
  std::string field;
  std::string what_to_log;  ///< one sentence: what to log, and the line or probe setting for it
};

/// The outcome of one named check. `message` carries the numbers; `route_back` is set on a
/// failure (the gate to return to); `divergence` on a failed baseline comparison. A check whose
/// `unobservable` is not empty neither passed nor failed: the trainer does not log what it
/// needs (evaluate_gate turns it into a finding of its own).
struct CheckResult {
  std::string name;
  bool passed = false;
  std::string message;
  std::vector<CheckEvidence> evidence;
  std::string route_back;
  std::optional<MetricDivergence> divergence;
  /// Set on a failure that no later record can undo (a logged value already diverged from the
  /// baseline, a step was logged twice): the step since which it is certain, -1 before the
  /// first step. A gate still running is stopped there (gates/early_stop.h).
  std::optional<std::int64_t> certain_at;
  std::vector<MissingField> unobservable{};
  /// On a passed check: what the run does that is not wrong for the gate but that its users
  /// should know (replicas keeping BatchNorm statistics of their own). Shown with the gate's
  /// line and in every report; never fails a gate.
  std::string warning{};
};

/// Typed access to a gate's [params], with the check's default when a key is absent.
class CheckParams {
 public:
  explicit CheckParams(const nlohmann::json& params) : params_(params) {}
  double number(const std::string& key, double fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  std::vector<std::string> strings(const std::string& key,
                                   const std::vector<std::string>& fallback) const;

 private:
  const nlohmann::json& params_;
};

/// What a check reads: the ranks' records and exits, the plan it was launched from, the
/// baseline (nullptr when there is none) and the gate's parameters.
struct CheckContext {
  const GateEvidence& evidence;
  const GatePlan& plan;
  const baseline::Baseline* baseline;
  CheckParams params;
};

/// Result builders used by every check.
CheckResult pass(std::string name, std::string message, std::vector<CheckEvidence> evidence = {});
CheckResult fail(std::string name, std::string message, std::vector<CheckEvidence> evidence = {});
/// The check could not be made: the trainer logs none of `fields` (field names of
/// gates/observability.h). `message` says what was looked for.
CheckResult unobservable(std::string name, std::string message,
                         const std::vector<std::string>& fields);
/// `failed`, marked as a failure no later record can undo, certain since `step` (-1: records
/// logged before the first step, such as `layout` or `batch`).
CheckResult certain(CheckResult failed, std::int64_t step);

/// CheckEvidence from any record's origin.
template <class R>
CheckEvidence evidence_of(const R& record, std::string text) {
  return CheckEvidence{record.at.rank, record.at.line, std::move(text)};
}

}  // namespace bigmac::gates
