#include "attempt/attempt_files.h"

#include "core/atomic_file.h"
#include "core/json_file.h"
#include "report/attempt_records.h"
#include "report/attempt_result.h"

namespace bigmac::attempt {

Expected<void> persist_launch_result(const AttemptPlan& plan, const AttemptWatch& watch) {
  return write_file_atomically(
      plan.dir / "result.json",
      json_text(report::to_json(report::attempt_result_of(watch.result, watch.started_at)), 2) +
          "\n");
}

namespace {

Expected<void> write_diagnoses(const AttemptPlan& plan,
                               const std::vector<diagnose::Diagnosis>& diagnoses) {
  return write_file_atomically(plan.dir / "diagnosis.json",
                               json_text(diagnose::to_json(diagnoses), 2));
}

}  // namespace

Expected<void> persist_aborted_attempt(const AttemptPlan& plan, const AttemptWatch& watch,
                                       const std::vector<diagnose::Diagnosis>& diagnoses) {
  if (auto w = persist_launch_result(plan, watch); !w) return w;
  return write_diagnoses(plan, diagnoses);
}

Expected<void> persist_attempt(const AttemptPlan& plan, const AttemptWatch& watch,
                               const gates::GateEvidence& evidence,
                               const gates::GateVerdict& verdict,
                               const std::vector<diagnose::Diagnosis>& diagnoses) {
  if (auto w = persist_launch_result(plan, watch); !w) return w;
  const std::vector<logs::RankLog> ranks(evidence.ranks.begin(), evidence.ranks.end());
  if (auto w = write_file_atomically(
          plan.dir / report::kAttemptRecordsName,
          json_text(report::to_json(report::attempt_records_of(ranks))) + "\n");
      !w) {
    return w;
  }
  if (!verdict.passed) {
    if (auto w = write_diagnoses(plan, diagnoses); !w) return w;
  }
  // The verdict last: its presence says the attempt's files are complete.
  return write_file_atomically(plan.dir / "verdict.json", json_text(gates::to_json(verdict), 2));
}

}  // namespace bigmac::attempt
