#include "attempt/attempt_verdict.h"

#include <algorithm>

#include "diagnose/check_explanation.h"
#include "diagnose/route_back.h"
#include "gates/replica_checks.h"
#include "gates/series_rules.h"
#include "gates/step_checks.h"
#include "launch/rank_ending.h"

namespace bigmac::attempt {

gates::GateVerdict evaluate(const AttemptPlan& plan, const gates::GateEvidence& evidence,
                            const Reference* reference) {
  return gates::evaluate_gate(*plan.spec, plan.gate, evidence,
                              reference ? &reference->baseline : nullptr);
}

diagnose::LaunchFacts launch_facts(const launch::LaunchPlan& plan,
                                   const launch::RunResult& result) {
  diagnose::LaunchFacts facts;
  facts.planned_world_size = plan.world_size;
  // Ranks started: torchrun and srun start several ranks from one process.
  for (const launch::PlannedProcess& p : plan.processes) {
    facts.processes_started += static_cast<int>(p.ranks.size());
  }
  facts.stalled = result.stalls;
  for (const launch::RankOutcome& r : result.ranks) {
    facts.exited.push_back(launch::ending_of(r, result));
  }
  return facts;
}

std::vector<diagnose::Diagnosis> diagnose_failure(
    const AttemptPlan& plan, const AttemptWatch& watch, const gates::GateEvidence& evidence,
    const gates::GateVerdict& verdict, const Reference* reference,
    const diagnose::Diagnoser& diagnoser, const diagnose::RegressionFacts* regression) {
  const diagnose::LaunchFacts facts = launch_facts(plan.launch, watch.result);
  const std::vector<logs::RankLog> logs(evidence.ranks.begin(), evidence.ranks.end());
  std::vector<launch::RankEnding> exit_errors;
  for (const gates::RankEvidence& r : evidence.ranks) {
    if (r.exit.error_lines.empty()) continue;
    exit_errors.push_back(r.exit);
    exit_errors.back().rank = r.rank;
  }
  diagnose::MetricInput input;
  input.logs = logs;
  input.exit_errors = exit_errors;
  input.baseline = reference ? &reference->baseline : nullptr;
  input.launch = &facts;
  input.regression = regression;
  input.configured.lr = plan.gate.config.train.lr;
  input.configured.dp = plan.gate.config.derived.dp;
  input.configured.pp = plan.gate.config.parallel.pp_size;
  input.configured.num_layers = plan.gate.config.model.num_layers;
  input.configured.loss_rank = plan.gate.config.trainer.loss_rank;
  input.earlier_checkpoints = &evidence.earlier_checkpoints;
  if (reference && !reference->baseline.steps.empty() &&
      reference->baseline.steps.front().samples_per_step) {
    for (const gates::RankEvidence& r : evidence.ranks) {
      if (r.batches.empty()) continue;
      input.configured.samples_per_step_fix = gates::samples_per_step_fix(
          plan.gate.config, r.batches.front(), *reference->baseline.steps.front().samples_per_step);
      break;
    }
  }
  input.limits.stall_limit_s = plan.gate.config.launch.stall_timeout_s;
  const gates::CheckParams params(plan.spec->params);
  input.limits.idle_limit_s = gates::idle_limit(params);
  input.limits.growth = gates::growth_rule(params);
  input.limits.loss = gates::metric_tolerance(params, baseline::Metric::kLoss);
  input.limits.grad_norm = gates::metric_tolerance(params, baseline::Metric::kGradNorm);
  input.limits.lr = gates::metric_tolerance(params, baseline::Metric::kLr);
  // "auto" compared as a band where the invariants prove the order differs by the layout
  // (gates/baseline_checks.cpp): the rules judge the same way, so none advises a band again.
  if (reference) {
    const gates::CheckContext ctx{evidence, plan.gate, &reference->baseline, params};
    const gates::DataOrder order = gates::judge_data_order(ctx);
    if (order.kind == gates::DataOrder::kBand) {
      if (params.text("loss_policy", "") == "auto")
        input.limits.loss.policy = baseline::Policy::kBand;
      if (params.text("grad_norm_policy", "") == "auto")
        input.limits.grad_norm.policy = baseline::Policy::kBand;
    }
    input.order_not_the_layouts = order.kind == gates::DataOrder::kStepByStep;
  }
  std::vector<diagnose::Diagnosis> diagnoses = diagnoser.diagnose(input);
  // The orchestrator's own SIGTERM, as torchrun's agent reports it in its workers' logs
  // (`SignalException: Process N got signal: 15`), is a consequence of the teardown, never a
  // symptom.
  const bool stopped_by_us =
      std::any_of(watch.result.ranks.begin(), watch.result.ranks.end(),
                  [](const launch::RankOutcome& r) { return r.stopped_by_us; });
  if (stopped_by_us) {
    std::erase_if(diagnoses, [](const diagnose::Diagnosis& d) {
      return !d.evidence.empty() &&
             std::all_of(d.evidence.begin(), d.evidence.end(), [](const diagnose::Evidence& e) {
               return e.text.find("SignalException") != std::string::npos &&
                      (e.text.find("signal: 15") != std::string::npos ||
                       e.text.find("signal: 9") != std::string::npos);
             });
    });
  }
  diagnose::route_back_within(diagnoses, plan.spec->id, plan.gate_ids);
  std::vector<diagnose::FailedCheck> failed;
  for (const gates::CheckResult& r : verdict.results) {
    // A failure with no evidence line judged nothing: the records it reads were never written.
    if (!r.passed) failed.push_back({r.name, r.message, r.evidence.empty()});
  }
  diagnose::explain_failed_checks(diagnoser.catalog(), diagnoses, failed, verdict.gate_id);
  return diagnoses;
}

}  // namespace bigmac::attempt
