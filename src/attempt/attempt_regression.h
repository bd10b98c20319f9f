#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attempt/attempt_plan.h"
#include "attempt/run_context.h"
#include "baseline/regression.h"
#include "diagnose/metric_rules.h"
#include "gates/gate_evidence.h"

namespace bigmac::attempt {

/// The commands that accept a moved baseline on purpose, in order: run the first gate without
/// the stored baseline, record it, review the diff, commit it.
std::vector<std::string> accept_commands(const RunContext& context, const Reference& reference);

/// Phase verdict, for a failed first gate compared with a stored baseline (CI keeps it in
/// git): the regression (first divergent step and metric, exact and tolerance checks side by
/// side, what moved, the last passing commit, how to accept it) worded for the
/// `baseline_regression` diagnosis. None for a later gate, a run without a stored baseline, or
/// a failure that is not a baseline mismatch.
std::optional<diagnose::RegressionFacts> regression_facts(const RunContext& context,
                                                          const AttemptPlan& plan,
                                                          const gates::GateEvidence& evidence,
                                                          const Reference* reference);

}  // namespace bigmac::attempt
