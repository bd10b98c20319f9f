#include "gates/baseline_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <span>

#include "baseline/comparison.h"
#include "baseline/stage_layout.h"
#include "gates/observability.h"
#include "gates/replica_checks.h"
#include "gates/series_rules.h"

namespace bigmac::gates {
namespace {

using baseline::Metric;

// The step record of the observed run at `step`, for evidence lines.
CheckEvidence step_evidence(const CheckContext& ctx, std::int64_t step, std::string text) {
  if (const RankEvidence* owner = ctx.evidence.owner()) {
    for (const logs::StepRecord& s : owner->steps) {
      if (s.global_step == step) return evidence_of(s, std::move(text));
    }
  }
  return CheckEvidence{-1, 0, std::move(text)};
}

std::string divergence_message(const baseline::MetricComparison& c, const std::string& prefix,
                               std::size_t baseline_steps) {
  return fmt::format(
      "{} diverges from the baseline at step {}: {:.6g} vs {:.6g} (rel diff {:.3g}, allowed {}); "
      "{} of {} steps compared{}",
      prefix, *c.first_divergent_step, c.observed_value, c.baseline_value,
      c.baseline_value != 0
          ? std::abs(c.observed_value - c.baseline_value) / std::abs(c.baseline_value)
          : c.max_rel_diff,
      c.tolerance.describe(), c.compared, baseline_steps,
      c.missing > 0 ? fmt::format(", {} missing", c.missing) : "");
}

// The band judges moving averages: name them, the band there and where it was confirmed.
std::string band_divergence_message(const baseline::MetricComparison& c, const std::string& prefix,
                                    std::size_t baseline_steps) {
  const baseline::BandPoint& p = c.band->judged[*c.band->first_divergent];
  return fmt::format(
      "{}'s {}-step moving average leaves the baseline's band at step {}: {:.6g} vs {:.6g} "
      "(allowed {:.6g} to {:.6g}; {}), outside at {} steps in a row by step {}; {} of {} steps "
      "compared{}",
      prefix, c.tolerance.band.window, p.step, p.observed, p.baseline, p.low, p.high,
      c.tolerance.describe(), c.tolerance.band.confirm, c.band->confirmed_at.value_or(p.step),
      c.compared, baseline_steps, c.missing > 0 ? fmt::format(", {} missing", c.missing) : "");
}

CheckResult metric_vs_baseline(const CheckContext& ctx, const char* name, Metric metric,
                               const std::string& prefix) {
  if (!ctx.baseline)
    return fail(name, "no baseline to compare against (record one with the single gate)");
  const baseline::Baseline observed = baseline::summarize_records(
      ctx.evidence.all_records(), "observed", {}, ctx.evidence.loss_rank);
  baseline::Tolerance tol = metric_tolerance(ctx.params, metric);
  baseline::MetricComparison c = baseline::compare_metric(*ctx.baseline, observed, metric, tol);
  // "auto": step by step, unless the evidence proves the samples differ by the layout alone
  // (invariants held, step 0 already apart); then as a band, said so. Never a band when the
  // replicas disagree or read the same samples: those fail their own checks.
  std::string policy_note;
  bool order_pending = false;
  if (ctx.params.text(prefix + "_policy", "") == "auto" && !c.within && c.first_divergent_step &&
      !ctx.baseline->steps.empty() &&
      *c.first_divergent_step == ctx.baseline->steps.front().global_step) {
    const DataOrder order = judge_data_order(ctx);
    if (order.kind == DataOrder::kBand) {
      tol.policy = baseline::Policy::kBand;
      c = baseline::compare_metric(*ctx.baseline, observed, metric, tol);
      policy_note = "; compared as a band (policy auto): " + order.why;
    } else if (order.kind == DataOrder::kPending) {
      // The evidence that may still choose a band is on its way: not certain yet.
      order_pending = true;
      policy_note = "; the policy is not settled yet: " + order.why;
    }
  }
  if (c.compared == 0) {
    auto has = [&](const baseline::Baseline& b) {
      return std::any_of(b.steps.begin(), b.steps.end(), [&](const baseline::BaselineStep& s) {
        switch (metric) {
          case Metric::kLoss:
            return s.loss.has_value();
          case Metric::kGradNorm:
            return s.grad_norm.has_value();
          case Metric::kLr:
            return s.lr.has_value();
          case Metric::kSamplesPerStep:
            return s.samples_per_step.has_value();
        }
        return false;
      });
    };
    if (!observed.steps.empty() && !has(observed)) {
      return unobservable(
          name, fmt::format("none of the {} logged steps has a {}", observed.steps.size(), prefix),
          {prefix});
    }
    if (!ctx.baseline->steps.empty() && !has(*ctx.baseline)) {
      CheckResult r = unobservable(
          name,
          fmt::format("the baseline's {} steps have no {}", ctx.baseline->steps.size(), prefix),
          {prefix});
      r.unobservable.back().what_to_log += "; then record the baseline again (baseline record)";
      return r;
    }
    return fail(name, fmt::format("no step has {} on both sides ({} baseline steps, {} logged): "
                                  "nothing compared",
                                  prefix, ctx.baseline->steps.size(), observed.steps.size()));
  }
  // A baseline recorded elsewhere (cuda, bf16, another torch) is named whatever the outcome.
  const std::string other_fingerprint =
      baseline::fingerprint_difference(observed.fingerprint, ctx.baseline->fingerprint);
  const std::string fingerprint_note =
      other_fingerprint.empty()
          ? std::string()
          : "; the baseline was recorded with another fingerprint (this run vs the baseline: " +
                other_fingerprint + ")";
  if (!c.within) {
    const std::int64_t step = *c.first_divergent_step;
    CheckResult r = fail(name,
                         (c.band ? band_divergence_message(c, prefix, ctx.baseline->steps.size())
                                 : divergence_message(c, prefix, ctx.baseline->steps.size())) +
                             fingerprint_note + policy_note,
                         {step_evidence(ctx, step,
                                        fmt::format("step {} {}={:.6g} (baseline {:.6g})", step,
                                                    prefix, c.observed_value, c.baseline_value))});
    r.divergence = MetricDivergence{std::string(baseline::metric_name(metric)), step,
                                    c.observed_value, c.baseline_value, c.tolerance};
    if (!order_pending) r.certain_at = baseline::divergence_certain_at(c);
    const bool at_first =
        !ctx.baseline->steps.empty() && step == ctx.baseline->steps.front().global_step;
    r.route_back =
        ctx.params.text(prefix + (at_first ? "_route_back_first_step" : "_route_back_later"), "");
    return r;
  }
  if (c.missing > 0) {
    return fail(name, fmt::format("{} of {} baseline steps have no logged {}", c.missing,
                                  ctx.baseline->steps.size(), prefix));
  }
  if (c.band && !c.exact) {
    return pass(name, fmt::format("{}'s moving average stays within the baseline's band at all {} "
                                  "steps ({}; largest single-step rel diff {:.3g} at step {}){}",
                                  prefix, c.compared, c.tolerance.describe(), c.max_rel_diff,
                                  c.max_rel_diff_step, policy_note));
  }
  std::string how = c.exact
                        ? "exactly" + fingerprint_note
                        : fmt::format("within {} (max rel diff {:.3g} at step {})",
                                      c.tolerance.describe(), c.max_rel_diff, c.max_rel_diff_step);
  if (!c.exact) {
    const std::string& why = other_fingerprint;
    if (!why.empty()) {
      how += "; drift: other fingerprint: " + why;
    } else if (observed.fingerprint.world_size != ctx.baseline->fingerprint.world_size) {
      how += fmt::format("; drift: reduction order ({} ranks vs {} in the baseline)",
                         observed.fingerprint.world_size, ctx.baseline->fingerprint.world_size);
    } else {
      how += "; drift: reduction order or a non-deterministic kernel";
    }
  }
  return pass(name,
              fmt::format("{} matches the baseline at all {} steps, {}", prefix, c.compared, how));
}

}  // namespace

CheckResult check_loss_vs_baseline(const CheckContext& ctx) {
  return metric_vs_baseline(ctx, "loss_vs_baseline", Metric::kLoss, "loss");
}

CheckResult check_grad_norm_vs_baseline(const CheckContext& ctx) {
  return metric_vs_baseline(ctx, "grad_norm_vs_baseline", Metric::kGradNorm, "grad_norm");
}

CheckResult check_lr_vs_baseline(const CheckContext& ctx) {
  return metric_vs_baseline(ctx, "lr_vs_baseline", Metric::kLr, "lr");
}

CheckResult check_param_count(const CheckContext& ctx) {
  const char* name = "param_count";
  std::optional<std::int64_t> total;
  std::vector<CheckEvidence> evidence;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ModelRecord& m : r.models) {
      // The model and layout events come once, before step 0: what they say is final.
      if (total && *total != m.param_count) {
        return certain(
            fail(name,
                 fmt::format("rank {} counts {} parameters, rank {} counted {}", r.rank,
                             m.param_count, evidence.front().rank, *total),
                 {evidence.front(), evidence_of(m, fmt::format("param_count={}", m.param_count))}),
            -1);
      }
      total = m.param_count;
      if (evidence.empty())
        evidence.push_back(evidence_of(m, fmt::format("param_count={}", m.param_count)));
    }
  }
  if (!total)
    return not_logged(ctx.evidence, name, "no `model` event: nothing to compare", {"model"});
  std::string detail;
  const std::map<int, baseline::StageLayout> stages =
      baseline::stage_layouts(std::span<const RankEvidence>(ctx.evidence.ranks));
  if (!stages.empty()) {
    const baseline::StageParamSum counted = baseline::stage_param_sum(stages);
    const std::int64_t sum = counted.sum, tied = counted.tied_duplicates;
    std::vector<std::string> parts, tied_names;
    for (const auto& [stage, l] : stages) {
      parts.push_back(fmt::format("stage {}: {}", stage, l.record->param_count));
      for (const std::string& t : l.record->tied)
        tied_names.push_back(fmt::format("{} (stage {})", t, stage));
    }
    if (counted.owned() != *total) {
      std::vector<CheckEvidence> ev{evidence.front()};
      std::size_t i = 0;
      for (const auto& [stage, l] : stages) ev.push_back(evidence_of(*l.record, parts[i++]));
      CheckResult r = fail(name,
                           fmt::format("stages hold {} parameters ({}) minus {} tied duplicates = "
                                       "{}, but the model has {}",
                                       sum, fmt::join(parts, ", "), tied, counted.owned(), *total),
                           std::move(ev));
      // Final once every stage has logged its layout; a stage still to come may add its part.
      const bool all_stages = static_cast<int>(stages.size()) == ctx.plan.config.parallel.pp_size;
      return all_stages ? certain(std::move(r), -1) : r;
    }
    detail = fmt::format(
        "; stages sum to it ({}{})", fmt::join(parts, ", "),
        tied > 0 ? fmt::format(", minus {} tied duplicates: {}", tied, fmt::join(tied_names, ", "))
                 : "");
  }
  if (ctx.baseline && ctx.baseline->structure.param_count &&
      *ctx.baseline->structure.param_count != *total) {
    return certain(fail(name,
                        fmt::format("the model has {} parameters, the baseline {}", *total,
                                    *ctx.baseline->structure.param_count),
                        std::move(evidence)),
                   -1);
  }
  return pass(name,
              fmt::format("{} parameters on every rank{}{}", *total,
                          ctx.baseline ? ", as in the baseline" : "", detail),
              std::move(evidence));
}

CheckResult check_param_digest(const CheckContext& ctx) {
  const char* name = "param_digest";
  std::optional<logs::ModelRecord> first;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ModelRecord& m : r.models) {
      if (m.param_digest.empty()) continue;
      if (!first) {
        first = m;
      } else if (first->param_digest != m.param_digest) {
        return certain(
            fail(name,
                 fmt::format("initial parameters differ between ranks: {} on rank {}, {} on "
                             "rank {} (seed not shared?)",
                             first->param_digest, first->at.rank, m.param_digest, m.at.rank),
                 {evidence_of(*first, "param_digest=" + first->param_digest),
                  evidence_of(m, "param_digest=" + m.param_digest)}),
            -1);
      }
    }
  }
  if (!first)
    return not_logged(ctx.evidence, name, "no param_digest logged: nothing to compare",
                      {logged_nowhere<logs::ModelRecord>(ctx.evidence) ? "model" : "param_digest"});
  if (ctx.baseline && !ctx.baseline->structure.param_digest.empty() &&
      ctx.baseline->structure.param_digest != first->param_digest) {
    return certain(fail(name,
                        fmt::format("initial parameters {} differ from the baseline's {} (seed "
                                    "or model config changed?)",
                                    first->param_digest, ctx.baseline->structure.param_digest),
                        {evidence_of(*first, "param_digest=" + first->param_digest)}),
                   -1);
  }
  return pass(name, fmt::format("initial parameter digest {} on every rank{}", first->param_digest,
                                ctx.baseline ? ", as in the baseline" : ""));
}

}  // namespace bigmac::gates
