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

/// The outcome of one named check. `message` carries the numbers; `route_back` is set on a
/// failure (the gate to return to); `divergence` on a failed baseline comparison.
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
/// `failed`, marked as a failure no later record can undo, certain since `step` (-1: records
/// logged before the first step, such as `layout` or `batch`).
CheckResult certain(CheckResult failed, std::int64_t step);

/// CheckEvidence from any record's origin.
template <class R>
CheckEvidence evidence_of(const R& record, std::string text) {
  return CheckEvidence{record.at.rank, record.at.line, std::move(text)};
}

}  // namespace bigmac::gates
