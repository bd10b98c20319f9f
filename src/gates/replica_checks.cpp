#include "gates/replica_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "baseline/replica_sync.h"

namespace bigmac::gates {
namespace {

// The data-parallel replicas of each stage, or why they cannot be told.
struct Groups {
  std::vector<std::vector<const logs::RankLog*>> groups;
  std::string unknown;  ///< why the replicas are not known (then `groups` is empty)
};

Groups replica_groups(const CheckContext& ctx) {
  Groups out;
  const config::Config& c = ctx.plan.config;
  if (c.parallel.tp_size > 1) {
    out.unknown = "with tensor parallelism the replicas of one shard are not told apart";
    return out;
  }
  if (c.parallel.pp_size == 1) {
    std::vector<const logs::RankLog*> all;
    for (const RankEvidence& r : ctx.evidence.ranks) all.push_back(&r);
    out.groups.push_back(std::move(all));
    return out;
  }
  std::map<int, std::vector<const logs::RankLog*>> by_stage;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    if (r.layouts.empty()) {
      out.unknown = fmt::format("rank {} logged no layout: its stage is not known", r.rank);
      return out;
    }
    by_stage[r.layouts.front().stage].push_back(&r);
  }
  for (auto& [stage, ranks] : by_stage) out.groups.push_back(std::move(ranks));
  return out;
}

std::string digest_text(std::uint64_t d) { return fmt::format("{:016x}", d); }

// How close the first step's loss must be to the baseline's for its samples to count as the
// baseline's: far above a reduction order's rounding (~1e-7), far below another batch's loss.
constexpr double kSameSamplesRelDiff = 1e-5;

CheckEvidence evidence_at(const baseline::RankDigest& d, std::int64_t step, const char* what) {
  return CheckEvidence{
      d.rank, d.at.line,
      fmt::format("rank {} step {}: {} {}", d.rank, step, what, digest_text(d.digest))};
}

// One invariant over every stage's replicas: the first pair the scan finds fails the gate
// (for good: the step is logged), else it passes when some step had two replicas to compare.
template <class Scan, class Words>
CheckResult judge_replicas(const CheckContext& ctx, const char* name, Scan scan, const char* field,
                           const char* what, Words words, const std::string& passed) {
  if (ctx.plan.config.derived.dp <= 1) return pass(name, "one replica: nothing to compare");
  const Groups g = replica_groups(ctx);
  if (!g.unknown.empty()) return unobservable(name, g.unknown, {"layout"});
  std::int64_t compared = 0;
  for (const auto& group : g.groups) {
    const baseline::ReplicaScan found = scan(group);
    compared += found.steps_compared;
    if (!found.first) continue;
    const baseline::ReplicaPair& p = *found.first;
    CheckResult r =
        fail(name, words(p), {evidence_at(p.a, p.step, what), evidence_at(p.b, p.step, what)});
    r.route_back = "dp";
    return certain(std::move(r), p.step);
  }
  if (compared == 0) {
    return unobservable(name, fmt::format("no step has the {}s of two replicas", what), {field});
  }
  return pass(name, fmt::format(fmt::runtime(passed), compared));
}

}  // namespace

CheckResult check_replicas_in_sync(const CheckContext& ctx) {
  return judge_replicas(
      ctx, "replicas_in_sync", baseline::scan_params_in_sync, "param_digest_after_step",
      "param_digest",
      [](const baseline::ReplicaPair& p) {
        return fmt::format(
            "the replicas hold different parameters after step {}: {} on rank {}, {} on rank {}; "
            "under data parallelism they must be equal after every step (gradients averaged "
            "alike, the same start)",
            p.step, digest_text(p.a.digest), p.a.rank, digest_text(p.b.digest), p.b.rank);
      },
      "every replica holds the same parameters at the {} digested steps");
}

CheckResult check_no_duplicate_samples(const CheckContext& ctx) {
  return judge_replicas(
      ctx, "no_duplicate_samples", baseline::scan_duplicate_inputs, "input_digest", "input_digest",
      [](const baseline::ReplicaPair& p) {
        return fmt::format(
            "ranks {} and {} consumed the same micro-batch at step {} (input digest {}): the data "
            "is not sharded across the replicas, so each sample is used several times a step",
            p.a.rank, p.b.rank, p.step, digest_text(p.a.digest));
      },
      "the replicas read different micro-batches at all {} steps");
}

std::optional<std::string> layout_dependent_order(const CheckContext& ctx) {
  if (ctx.plan.config.derived.dp <= 1 || !ctx.baseline) return std::nullopt;
  const std::string& base_digest = ctx.baseline->structure.param_digest;
  if (base_digest.empty()) return std::nullopt;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ModelRecord& m : r.models) {
      if (m.param_digest != base_digest) return std::nullopt;  // another start, not the data
    }
  }
  // The first step's loss depends on the initial parameters (the baseline's, above) and that
  // step's samples alone: when it is the baseline's, so are the samples, and the order does not
  // depend on the layout (a difference at that step is the gradients', not the data's).
  const RankEvidence* owner = ctx.evidence.step_owner();
  const auto& base_steps = ctx.baseline->steps;
  std::string first_loss;
  if (owner != nullptr && !owner->steps.empty() && !base_steps.empty() &&
      owner->steps.front().global_step == base_steps.front().global_step &&
      owner->steps.front().loss && base_steps.front().loss) {
    const double seen = *owner->steps.front().loss, base = *base_steps.front().loss;
    if (std::abs(seen - base) <= kSameSamplesRelDiff * std::max(std::abs(base), 1e-12)) {
      return std::nullopt;
    }
    first_loss =
        fmt::format(", and yet the first step's loss is {:.6g}, the baseline's {:.6g}", seen, base);
  }
  const Groups g = replica_groups(ctx);
  if (!g.unknown.empty()) return std::nullopt;
  std::int64_t in_sync = 0, distinct = 0;
  for (const auto& group : g.groups) {
    const baseline::ReplicaScan params = baseline::scan_params_in_sync(group);
    const baseline::ReplicaScan inputs = baseline::scan_duplicate_inputs(group);
    if (params.first || inputs.first) return std::nullopt;
    in_sync += params.steps_compared;
    distinct += inputs.steps_compared;
  }
  if (in_sync == 0 || distinct == 0) return std::nullopt;  // nothing proves the invariants
  return fmt::format(
      "the data order depends on the layout: the initial parameters are the baseline's ({}), "
      "the replicas stay in sync ({} digested steps) and read different micro-batches ({} "
      "steps){}, so the samples of a step differ from the single process's by the layout alone",
      base_digest, in_sync, distinct, first_loss);
}

}  // namespace bigmac::gates
