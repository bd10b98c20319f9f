#pragma once

#include <vector>

#include "attempt/attempt_plan.h"
#include "attempt/attempt_watch.h"
#include "core/error.h"
#include "diagnose/diagnosis.h"
#include "gates/gate_evidence.h"
#include "gates/gate_verdict.h"

namespace bigmac::attempt {

/// Phase persist: what the attempt leaves in its folder for `report`, `status` and `resume`:
/// result.json (how each rank ended), records.json (what the reports show of the logs),
/// verdict.json and, on failure, diagnosis.json. Every write is checked; the error names the
/// file and why (infrastructure: the run stays resumable from this gate).
Expected<void> persist_attempt(const AttemptPlan& plan, const AttemptWatch& watch,
                               const gates::GateEvidence& evidence,
                               const gates::GateVerdict& verdict,
                               const std::vector<diagnose::Diagnosis>& diagnoses);

/// result.json and diagnosis.json, no verdict: the ranks ran, but the attempt is the
/// infrastructure's failure (the master port was taken at the bind), not the trainer's.
Expected<void> persist_aborted_attempt(const AttemptPlan& plan, const AttemptWatch& watch,
                                       const std::vector<diagnose::Diagnosis>& diagnoses);

/// result.json alone, for an attempt that ended without a verdict (interrupted, could not
/// launch).
Expected<void> persist_launch_result(const AttemptPlan& plan, const AttemptWatch& watch);

}  // namespace bigmac::attempt
