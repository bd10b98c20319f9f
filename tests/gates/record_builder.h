#pragma once

// Hand-written records for check tests: a healthy run of each kind, which a test then breaks
// in exactly one place.

#include <string>
#include <vector>

#include "config/config.h"
#include "gates/gate_evidence.h"
#include "gates/gate_plan.h"
#include "gates/gate_spec.h"
#include "logs/record.h"

namespace bigmac::gates::testing {

inline RankEnding clean_exit() { return RankEnding{true, 0, {}, false, {}, false}; }

inline logs::RecordOrigin at(int rank, std::int64_t line, double t = 0) {
  return logs::RecordOrigin{rank, line, t};
}

/// A full healthy rank log: run, pg_ready (world > 1), batch, model, layout, heartbeats, steps
/// (only when `owns_steps`), done. Loss falls 4.0, 3.9, ...; grad_norm 1.0, 0.99, ...
std::vector<logs::Record> healthy_rank(int rank, int world, int steps, bool owns_steps,
                                       std::int64_t micro = 2, std::int64_t accum = 4,
                                       std::int64_t dp = 1);

/// The default configuration (built-in defaults, as configs/demo.toml).
config::Config default_config();

/// The real gate specs from stages/.
const std::vector<GateSpec>& real_specs();
const GateSpec& spec(const std::string& id);

/// plan_gate on the default configuration; aborts the test binary on error.
GatePlan plan(const std::string& id, int max_steps = 3);

/// One-rank evidence of a healthy single gate with `steps` steps.
GateEvidence single_evidence(int steps = 3);

/// Pipeline evidence: `stages` ranks, mb records in `schedule` order, shapes and losses.
GateEvidence pipeline_evidence(int stages, int micro_batches, int steps,
                               const std::string& schedule, int seq = 32);

}  // namespace bigmac::gates::testing

#include "baseline/baseline.h"
#include "gates/check.h"

namespace bigmac::gates::testing {

/// Runs one check with `params` (the gate's [params]).
inline CheckResult run_check(CheckResult (*check)(const CheckContext&),
                             const GateEvidence& evidence, const GatePlan& plan,
                             const baseline::Baseline* reference = nullptr,
                             const nlohmann::json& params = nlohmann::json::object()) {
  return check(CheckContext{evidence, plan, reference, CheckParams(params)});
}

/// The baseline a healthy single run of `steps` steps records.
inline baseline::Baseline baseline_of(const GateEvidence& evidence) {
  return baseline::summarize_records(evidence.all_records(), "test", "");
}

}  // namespace bigmac::gates::testing
