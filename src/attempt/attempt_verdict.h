#pragma once

#include <vector>

#include "attempt/attempt_plan.h"
#include "attempt/attempt_watch.h"
#include "attempt/run_context.h"
#include "diagnose/diagnoser.h"
#include "diagnose/diagnosis.h"
#include "gates/gate_evidence.h"
#include "gates/gate_verdict.h"

namespace bigmac::attempt {

/// Phase evaluate: the gate's checks over what its ranks logged and how they ended.
gates::GateVerdict evaluate(const AttemptPlan& plan, const gates::GateEvidence& evidence,
                            const Reference* reference);

/// Phase verdict, for a failed gate: every diagnosis that explains it, best first, from the
/// ranks' records, the reference, what the launcher saw and, at the first gate, the regression
/// against the stored baseline (attempt_regression.h), judged with the gate's own [params].
/// Each diagnosis's route back is this gate or an earlier one, never a later one; each failed
/// check of `verdict` is explained by at least one of them (a `no_known_cause` diagnosis names
/// a check no rule explains).
std::vector<diagnose::Diagnosis> diagnose_failure(
    const AttemptPlan& plan, const AttemptWatch& watch, const gates::GateEvidence& evidence,
    const gates::GateVerdict& verdict, const Reference* reference,
    const diagnose::Diagnoser& diagnoser, const diagnose::RegressionFacts* regression);

/// What the launcher knows and the logs cannot say: planned and started processes, the
/// watchdog's stalls, every rank's ending.
diagnose::LaunchFacts launch_facts(const launch::LaunchPlan& plan, const launch::RunResult& result);

}  // namespace bigmac::attempt
