#include "gates/early_stop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gates/check_registry.h"

namespace bigmac::gates {

bool stops_on_divergence(const GateSpec& spec) {
  const auto it = spec.params.find("stop_on_divergence");
  return it == spec.params.end() || !it->is_boolean() || it->get<bool>();
}

std::optional<CertainFailure> certain_failure(const GateSpec& spec, const GatePlan& plan,
                                              const GateEvidence& so_far,
                                              const baseline::Baseline* reference) {
  const CheckContext ctx{so_far, plan, reference, CheckParams(spec.params)};
  std::optional<CertainFailure> earliest;
  for (const CheckSpec& check : spec.checks) {
    if (check.needs_baseline && !reference) continue;
    const CheckFunction run = find_check(check.name);
    if (!run) continue;
    const CheckResult r = run(ctx);
    // The earliest step decides (the gate's order among equals), whenever the question is
    // asked: a grad_norm off at step 0 is the cause of a loss off at step 1, also when the
    // records of step 1 are in before anyone asked.
    if (!r.passed && r.certain_at && (!earliest || *r.certain_at < earliest->step)) {
      earliest = CertainFailure{check.name, *r.certain_at, r.message};
    }
  }
  return earliest;
}

GateVerdict judge_stopped_early(GateVerdict v, const CertainFailure& live,
                                const GateEvidence& evidence, const GatePlan& plan,
                                const baseline::Baseline* reference) {
  // On the records as they were when the ranks had stopped, the earliest certain failure
  // decides, as certain_failure would have named it then.
  CertainFailure cause = live;
  const CheckResult* decisive = nullptr;
  for (const CheckResult& r : v.results) {
    if (!r.passed && r.certain_at && (!decisive || *r.certain_at < *decisive->certain_at)) {
      decisive = &r;
    }
  }
  if (decisive) cause = CertainFailure{decisive->name, *decisive->certain_at, decisive->message};
  std::optional<std::int64_t> last;
  if (const RankEvidence* owner = evidence.owner()) {
    for (const logs::StepRecord& s : owner->steps)
      last = std::max(last.value_or(s.global_step), s.global_step);
  }
  const std::int64_t steps = reference && !reference->steps.empty()
                                 ? static_cast<std::int64_t>(reference->steps.size())
                                 : plan.config.train.max_steps;
  v.stopped_early = fmt::format(
      "stopped early {} of {}: {} failed for good {}",
      last ? fmt::format("at step {}", *last) : std::string("before step 0"), steps, cause.check,
      cause.step < 0 ? std::string("before the first step")
                     : fmt::format("at step {}", cause.step));
  v.passed = false;
  const bool certain = std::any_of(v.results.begin(), v.results.end(), [](const CheckResult& r) {
    return !r.passed && r.certain_at.has_value();
  });
  if (certain) {
    // What else failed may only be the cut: steps, `done` events and clean exits still to come.
    std::vector<CheckResult> kept;
    for (CheckResult& r : v.results) {
      if (r.passed || r.certain_at) {
        kept.push_back(std::move(r));
      } else {
        v.not_run.push_back(
            fmt::format("{}: not judged, the gate stopped early (on the records "
                        "so far: {})",
                        r.name, r.message));
      }
    }
    v.results = std::move(kept);
    // A field no record has shown yet may only not have been logged yet (the loss of a rank
    // stopped before its first step): not a finding about the trainer.
    for (const UnobservableFinding& u : v.unobservable) {
      v.not_run.push_back(
          fmt::format("{}: not judged, the gate stopped early (on the records so "
                      "far: {})",
                      fmt::join(u.checks, ", "), u.text()));
    }
    v.unobservable.clear();
  }
  const CheckResult* f = v.first_failure();
  v.route_back = f ? f->route_back : std::string();
  return v;
}

}  // namespace bigmac::gates
