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

CheckResult check_buffers_in_sync(const CheckContext& ctx) {
  const char* name = "buffers_in_sync";
  if (ctx.plan.config.derived.dp <= 1) return pass(name, "one replica: nothing to compare");
  const Groups g = replica_groups(ctx);
  if (!g.unknown.empty()) return unobservable(name, g.unknown, {"layout"});
  std::int64_t compared = 0;
  std::optional<baseline::ReplicaPair> apart;
  for (const auto& group : g.groups) {
    if (baseline::scan_params_in_sync(group).first) {
      return pass(name, "not applicable: the replicas' parameters differ (replicas_in_sync)");
    }
    const baseline::ReplicaScan found = baseline::scan_buffers_in_sync(group);
    compared += found.steps_compared;
    if (found.first && !apart) apart = found.first;
  }
  if (compared == 0) {
    return pass(name,
                "not applicable: no two replicas logged a buffer digest at one step (the probe "
                "writes one where the model has buffers, such as BatchNorm's statistics)");
  }
  if (!apart) {
    return pass(name, fmt::format("every replica's forward read the same buffers at the {} "
                                  "digested steps",
                                  compared));
  }
  const baseline::ReplicaPair& p = *apart;
  CheckResult r = pass(
      name,
      fmt::format("the replicas' buffers differ from step {} while their parameters agree", p.step),
      {evidence_at(p.a, p.step, "buffer_digest"), evidence_at(p.b, p.step, "buffer_digest")});
  r.warning = fmt::format(
      "at step {} rank {}'s forward read buffers {} and rank {}'s {}, while their parameters "
      "agree: buffers such as BatchNorm's running statistics are not synchronised (DDP with "
      "broadcast_buffers=False, or replicas averaged without DDP), so each replica evaluates "
      "and checkpoints with statistics of its own; training itself is not affected (it uses "
      "each batch's statistics). Where that matters, convert the model with "
      "torch.nn.SyncBatchNorm.convert_sync_batchnorm or keep broadcast_buffers=True",
      p.step, p.a.rank, digest_text(p.a.digest), p.b.rank, digest_text(p.b.digest));
  return r;
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

CheckResult check_sample_coverage(const CheckContext& ctx) {
  const char* name = "sample_coverage";
  if (!ctx.baseline) {
    return fail(name, "no baseline to compare against (record one with the single gate)");
  }
  const Groups g = replica_groups(ctx);
  if (!g.unknown.empty()) return unobservable(name, g.unknown, {"layout"});
  const std::vector<const logs::RankLog*>& readers = g.groups.front();
  const baseline::SampleCoverage cov =
      baseline::cover_samples(readers, ctx.baseline->steps, ctx.baseline->structure.input_shape);
  if (!cov.not_comparable.empty()) return pass(name, "not applicable: " + cov.not_comparable);
  if (cov.steps_logged == 0) {
    return unobservable(
        name,
        fmt::format("no step has the sample sets of all {} ranks that read input", readers.size()),
        {"sample_count"});
  }
  if (cov.steps_compared == 0) {
    CheckResult r = unobservable(
        name,
        fmt::format("the baseline's {} steps have no sample sets", ctx.baseline->steps.size()),
        {"sample_count"});
    r.unobservable.back().what_to_log += "; then record the baseline again (baseline record)";
    return r;
  }
  if (cov.count_differs) {
    const baseline::StepSamples& s = *cov.count_differs;
    std::string ranks;
    for (const auto& [rank, count] : s.per_rank) {
      ranks += fmt::format("{}rank {}: {}", ranks.empty() ? "" : ", ", rank, count);
    }
    CheckResult r =
        fail(name,
             fmt::format("step {} consumed {} samples over the ranks that read input ({}), the "
                         "baseline's step {}: data parallelism must consume the single process's "
                         "samples each step, each once; {} were {}",
                         s.step, s.count, ranks, cov.baseline_count,
                         std::abs(s.count - cov.baseline_count),
                         s.count < cov.baseline_count
                             ? "dropped (a short or skipped micro-batch, drop_last on a shard)"
                             : "added (a sampler padding its shards, a micro-batch read twice)"),
             {CheckEvidence{s.at.rank, s.at.line,
                            fmt::format("step {}: {} samples ({}); baseline {}", s.step, s.count,
                                        ranks, cov.baseline_count)}});
    r.route_back = "dp";
    return certain(std::move(r), s.step);
  }
  if (cov.repeated()) {
    const baseline::RepeatedSample& r = *cov.first_repeat;
    CheckResult out = fail(
        name,
        fmt::format(
            "rank {} at step {} read a sample rank {} had read at step {} (sample hash {:016x}): "
            "over the first {} steps the {} ranks that read input read {} of their {} samples "
            "again, where the single process read each of its samples once; under data "
            "parallelism each sample of an epoch is one rank's, so the ranks do not split the "
            "data between them, each draws from all of it",
            r.again.rank, r.again.step, r.first.rank, r.first.step, r.hash, cov.repeat_steps,
            readers.size(), cov.repeats, cov.repeat_reads),
        {CheckEvidence{r.first.at.rank, r.first.at.line,
                       fmt::format("step {}: rank {} reads sample {:016x}", r.first.step,
                                   r.first.rank, r.hash)},
         CheckEvidence{r.again.at.rank, r.again.at.line,
                       fmt::format("step {}: rank {} reads sample {:016x} again", r.again.step,
                                   r.again.rank, r.hash)}});
    out.route_back = "dp";
    return certain(std::move(out), r.again.step);
  }
  std::string once;
  if (cov.repeat_steps > 0) {
    once = fmt::format("; over the first {} steps they read each of their {} samples once{}",
                       cov.repeat_steps, cov.repeat_reads,
                       cov.repeats > 0 ? fmt::format(" but {} (an epoch's padding, at most {})",
                                                     cov.repeats, cov.repeats_allowed)
                                       : std::string());
  }
  if (cov.first_other_samples >= 0) {
    return pass(name, fmt::format("the ranks consume as many samples as the baseline at all {} "
                                  "steps compared, but other ones from step {}{}: the data order "
                                  "depends on the layout (a sampler dealing samples to ranks, a "
                                  "per-rank seed), so policy auto compares it as a band",
                                  cov.steps_compared, cov.first_other_samples, once));
  }
  return pass(name, fmt::format("the ranks consumed exactly the baseline's samples at all {} "
                                "steps compared: the data order does not depend on the layout",
                                cov.steps_compared));
}

namespace {

// The first step's loss, the run's and the baseline's, when both have it at the same step.
std::optional<std::pair<double, double>> first_step_losses(const CheckContext& ctx) {
  const auto& base_steps = ctx.baseline->steps;
  const RankEvidence* owner = ctx.evidence.owner();
  if (owner == nullptr || owner->steps.empty() || base_steps.empty() ||
      owner->steps.front().global_step != base_steps.front().global_step ||
      !owner->steps.front().loss || !base_steps.front().loss) {
    return std::nullopt;
  }
  return std::pair{*owner->steps.front().loss, *base_steps.front().loss};
}

bool same_loss(const std::pair<double, double>& losses) {
  const auto [seen, base] = losses;
  return std::abs(seen - base) <= kSameSamplesRelDiff * std::max(std::abs(base), 1e-12);
}

}  // namespace

DataOrder judge_data_order(const CheckContext& ctx) {
  if (ctx.plan.config.derived.dp <= 1 || !ctx.baseline) return {};
  const std::string& base_digest = ctx.baseline->structure.param_digest;
  if (base_digest.empty()) return {};
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ModelRecord& m : r.models) {
      if (m.param_digest != base_digest) return {};  // another start, not the data
    }
  }
  const Groups g = replica_groups(ctx);
  if (!g.unknown.empty()) return {};
  const auto& base_steps = ctx.baseline->steps;
  const std::int64_t first_step = base_steps.empty() ? 0 : base_steps.front().global_step;
  // The sample sets say it outright: the baseline's samples (any difference is not the data
  // order's), as many but others (the order depends on the layout), or a count that differs
  // (sample_coverage fails: compared step by step).
  std::string samples_note;
  bool regrouped = false;  // the baseline's samples, grouped into other micro-batches
  const std::vector<const logs::RankLog*>& readers = g.groups.front();
  const baseline::SampleCoverage cov =
      baseline::cover_samples(readers, base_steps, ctx.baseline->structure.input_shape);
  const bool base_has_samples = !base_steps.empty() && base_steps.front().sample_count;
  const auto losses = first_step_losses(ctx);
  if (cov.steps_compared > 0) {
    if (cov.count_differs || cov.repeated()) return {DataOrder::kStepByStep, {}};
    if (cov.first_other_samples < 0) {
      // Each step's samples are the baseline's; so is the first step's loss, from the same
      // parameters, unless it depends on how the samples are grouped into micro-batches, as
      // with BatchNorm, whose running statistics the probe digests as buffers. Without
      // buffers a first loss apart is a fault of the loss, judged step by step.
      bool buffers = false;
      for (const logs::RankLog* r : readers) {
        for (const auto& d : r->step_digests) buffers = buffers || d.buffers.has_value();
      }
      if (!losses || same_loss(*losses) || !buffers) return {DataOrder::kStepByStep, {}};
      regrouped = true;
      samples_note = fmt::format(
          ", and every step consumes exactly the baseline's samples, yet the first step's loss "
          "is {:.6g}, the baseline's {:.6g}, and the model has buffers (batch statistics)",
          losses->first, losses->second);
    } else {
      samples_note = fmt::format(
          ", and from step {} they consume as many samples as the baseline but other ones",
          cov.first_other_samples);
    }
  } else if (base_has_samples && cov.logged) {
    return {DataOrder::kPending,
            fmt::format("the sample sets of step {} are not in from all {} ranks that read input",
                        first_step, readers.size())};
  } else if (losses) {
    // The first step's loss depends on the initial parameters (the baseline's, above) and
    // that step's samples alone: when it is the baseline's, so are the samples, and the order
    // does not depend on the layout (a difference at that step is the gradients').
    if (same_loss(*losses)) return {DataOrder::kStepByStep, {}};
    samples_note = fmt::format(", and yet the first step's loss is {:.6g}, the baseline's {:.6g}",
                               losses->first, losses->second);
  }
  std::int64_t in_sync = 0, distinct = 0;
  bool digested = false;
  for (const auto& group : g.groups) {
    const baseline::ReplicaScan params = baseline::scan_params_in_sync(group);
    const baseline::ReplicaScan inputs = baseline::scan_duplicate_inputs(group);
    if (params.first || inputs.first) return {DataOrder::kStepByStep, {}};  // their own checks
    in_sync += params.steps_compared;
    distinct += inputs.steps_compared;
    for (const logs::RankLog* r : group) digested = digested || !r->step_digests.empty();
  }
  if (in_sync == 0 || distinct == 0) {
    // Nothing proves the invariants yet; when the ranks log digests, the rest is on its way.
    if (!digested) return {};
    return {DataOrder::kPending,
            fmt::format("no step has the digests of two replicas yet ({} with parameters, {} "
                        "with inputs)",
                        in_sync, distinct)};
  }
  const std::string evidence = fmt::format(
      "the initial parameters are the baseline's ({}), the replicas stay in sync ({} digested "
      "steps) and read different micro-batches ({} steps){}",
      base_digest, in_sync, distinct, samples_note);
  if (regrouped) {
    return {DataOrder::kBand,
            fmt::format("the loss depends on how a step's samples are grouped: {}, so the same "
                        "samples in other micro-batches give another loss (BatchNorm normalises "
                        "each micro-batch by its own statistics)",
                        evidence)};
  }
  return {DataOrder::kBand,
          fmt::format("the data order depends on the layout: {}, so the samples of a step differ "
                      "from the single process's by the layout alone",
                      evidence)};
}

std::optional<std::string> layout_dependent_order(const CheckContext& ctx) {
  DataOrder order = judge_data_order(ctx);
  if (order.kind != DataOrder::kBand) return std::nullopt;
  return std::move(order.why);
}

}  // namespace bigmac::gates
