#include "gates/step_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "gates/observability.h"

namespace bigmac::gates {
namespace {

const std::vector<logs::StepRecord>* owner_steps(const CheckContext& ctx) {
  const RankEvidence* owner = ctx.evidence.step_owner();
  return owner ? &owner->steps : nullptr;
}

CheckResult no_steps(const char* name) {
  return fail(name, "no step records: nothing to check (did the trainer log `step` events?)");
}

bool has_loss(const logs::StepRecord& s) { return s.loss.has_value(); }
bool has_grad_norm(const logs::StepRecord& s) { return s.grad_norm.has_value(); }

CheckResult grad_norm_not_logged(const char* name, std::size_t steps) {
  return unobservable(name, fmt::format("none of the {} steps logs a grad_norm", steps),
                      {"grad_norm"});
}

// Whether rank `r` logged an event by its contract name.
bool logged_event(const RankEvidence& r, const std::string& ev) {
  return (ev == "run" && !r.runs.empty()) || (ev == "pg_ready" && !r.pg_ready.empty()) ||
         (ev == "batch" && !r.batches.empty()) || (ev == "model" && !r.models.empty()) ||
         (ev == "layout" && !r.layouts.empty()) || (ev == "heartbeat" && !r.heartbeats.empty()) ||
         (ev == "mb" && !r.micro_batches.empty()) || (ev == "shape" && !r.shapes.empty()) ||
         (ev == "digest" && !r.digests.empty()) || (ev == "done" && !r.dones.empty()) ||
         (ev == "ckpt" && !r.checkpoints.empty()) || (ev == "loss" && !r.losses.empty()) ||
         (ev == "step" && !r.steps.empty());
}

bool step_has(const logs::StepRecord& s, const std::string& f) {
  return (f == "loss" && s.loss) || (f == "grad_norm" && s.grad_norm) || (f == "lr" && s.lr) ||
         (f == "samples_per_step" && s.samples_per_step) || (f == "step_ms" && s.step_ms);
}

}  // namespace

CheckResult check_finite_loss(const CheckContext& ctx) {
  const char* name = "finite_loss";
  const auto* steps = owner_steps(ctx);
  if (!steps) return no_steps(name);
  if (step_field_nowhere(ctx.evidence, has_loss))
    return unobservable(name, fmt::format("none of the {} steps logs a loss", steps->size()),
                        {"loss"});
  std::int64_t checked = 0;
  for (const logs::StepRecord& s : *steps) {
    if (!s.loss) {
      return fail(name, fmt::format("step {} has no loss", s.global_step),
                  {evidence_of(s, fmt::format("step {} without loss", s.global_step))});
    }
    if (!std::isfinite(*s.loss)) {
      return fail(name,
                  fmt::format("loss is {} at step {} (after {} finite steps)", *s.loss,
                              s.global_step, checked),
                  {evidence_of(s, fmt::format("step {} loss={}", s.global_step, *s.loss))});
    }
    ++checked;
  }
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::LossRecord& l : r.losses) {
      if (!std::isfinite(l.value)) {
        return fail(name,
                    fmt::format("stage {} micro-batch {} loss is {} at step {}", l.stage, l.mb,
                                l.value, l.global_step),
                    {evidence_of(l, fmt::format("loss value={}", l.value))});
      }
    }
  }
  return pass(name, fmt::format("loss finite at all {} steps (last {:.6g})", checked,
                                steps->back().loss.value_or(0)));
}

CheckResult check_grad_norm_nonzero(const CheckContext& ctx) {
  const char* name = "grad_norm_nonzero";
  const auto* steps = owner_steps(ctx);
  if (!steps) return no_steps(name);
  if (step_field_nowhere(ctx.evidence, has_grad_norm))
    return grad_norm_not_logged(name, steps->size());
  for (const logs::StepRecord& s : *steps) {
    if (!s.grad_norm || *s.grad_norm == 0 || !std::isfinite(*s.grad_norm)) {
      const std::string value = s.grad_norm ? fmt::format("{}", *s.grad_norm) : "missing";
      return fail(
          name,
          fmt::format(
              "grad_norm is {} at step {}{}", value, s.global_step,
              s.grad_norm && *s.grad_norm == 0 ? ": no gradient reached the parameters" : ""),
          {evidence_of(s, fmt::format("step {} grad_norm={}", s.global_step, value))});
    }
  }
  return pass(name, fmt::format("grad_norm non-zero and finite at all {} steps", steps->size()));
}

CheckResult check_grad_norm_stable(const CheckContext& ctx) {
  const char* name = "grad_norm_stable";
  const auto* steps = owner_steps(ctx);
  if (!steps) return no_steps(name);
  if (step_field_nowhere(ctx.evidence, has_grad_norm))
    return grad_norm_not_logged(name, steps->size());
  const double factor = ctx.params.number("grad_norm_growth_factor", 1.5);
  const auto limit = static_cast<std::int64_t>(ctx.params.number("grad_norm_growth_steps", 3));
  std::int64_t run = 0, compared = 0;
  double worst = 0;
  for (std::size_t i = 1; i < steps->size(); ++i) {
    const auto& prev = (*steps)[i - 1];
    const auto& cur = (*steps)[i];
    if (!prev.grad_norm || !cur.grad_norm || *prev.grad_norm <= 0) continue;
    ++compared;
    const double ratio = *cur.grad_norm / *prev.grad_norm;
    worst = std::max(worst, ratio);
    run = (ratio > factor || !std::isfinite(ratio)) ? run + 1 : 0;
    if (run >= limit) {
      const auto& first = (*steps)[i + 1 - static_cast<std::size_t>(run)];
      return fail(
          name,
          fmt::format("grad_norm grew more than ×{:g} for {} consecutive steps ({} -> {}: "
                      "{:.6g} -> {:.6g})",
                      factor, run, (*steps)[i - static_cast<std::size_t>(run)].global_step,
                      cur.global_step, *(*steps)[i - static_cast<std::size_t>(run)].grad_norm,
                      *cur.grad_norm),
          {evidence_of(first, fmt::format("step {} grad_norm={:.6g}", first.global_step,
                                          first.grad_norm.value_or(0))),
           evidence_of(cur,
                       fmt::format("step {} grad_norm={:.6g}", cur.global_step, *cur.grad_norm))});
    }
  }
  if (compared == 0) return fail(name, "fewer than two steps with a grad_norm: nothing to compare");
  return pass(name, fmt::format("grad_norm never grew ×{:g} for {} steps in a row ({} step pairs, "
                                "largest step-over-step ratio {:.3g})",
                                factor, limit, compared, worst));
}

CheckResult check_step_sequence(const CheckContext& ctx) {
  const char* name = "step_sequence";
  const auto* steps = owner_steps(ctx);
  if (!steps) return no_steps(name);
  const std::int64_t expected = ctx.baseline && !ctx.baseline->steps.empty()
                                    ? static_cast<std::int64_t>(ctx.baseline->steps.size())
                                    : ctx.plan.config.train.max_steps;
  const char* source =
      ctx.baseline && !ctx.baseline->steps.empty() ? "the baseline's" : "max_steps";
  std::int64_t want = 0;
  std::set<std::int64_t> seen;
  for (const logs::StepRecord& s : *steps) {
    // A step logged twice or out of order stays so whatever comes next.
    if (seen.count(s.global_step)) {
      CheckResult r = fail(name, fmt::format("global_step {} logged twice", s.global_step),
                           {evidence_of(s, fmt::format("duplicate step {}", s.global_step))});
      r.certain_at = s.global_step;
      return r;
    }
    if (s.global_step != want) {
      CheckResult r =
          fail(name,
               fmt::format(
                   "expected global_step {} next, found {}{}", want, s.global_step,
                   s.global_step > want ? fmt::format(" (gap of {})", s.global_step - want) : ""),
               {evidence_of(s, fmt::format("step {}", s.global_step))});
      r.certain_at = s.global_step;
      return r;
    }
    seen.insert(s.global_step);
    ++want;
  }
  if (want != expected) {
    CheckResult r = fail(
        name,
        fmt::format("{} steps logged (0..{}), expected {} ({})", want, want - 1, expected, source),
        {evidence_of(steps->back(), fmt::format("last step {}", steps->back().global_step))});
    if (want > expected) r.certain_at = expected;  // too few can still grow; too many cannot
    return r;
  }
  return pass(name, fmt::format("steps 0..{} in order, {} as {}", want - 1, want, source));
}

CheckResult check_samples_per_step(const CheckContext& ctx) {
  const char* name = "samples_per_step";
  const std::int64_t planned = ctx.plan.samples_per_step;
  std::optional<std::int64_t> reference;
  if (ctx.baseline && !ctx.baseline->steps.empty())
    reference = ctx.baseline->steps.front().samples_per_step;
  const std::int64_t want = reference.value_or(planned);
  std::int64_t compared = 0;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::BatchRecord& b : r.batches) {
      ++compared;
      const std::int64_t product = b.micro_batch_size * b.grad_accum * b.dp;
      const std::string line =
          fmt::format("micro_batch_size={} grad_accum={} dp={} samples_per_step={}",
                      b.micro_batch_size, b.grad_accum, b.dp, b.samples_per_step);
      if (product != b.samples_per_step) {
        return certain(fail(name,
                            fmt::format("rank {} logs samples_per_step {} but micro × accum × dp = "
                                        "{} × {} × {} = {}",
                                        r.rank, b.samples_per_step, b.micro_batch_size,
                                        b.grad_accum, b.dp, product),
                            {evidence_of(b, line)}),
                       -1);
      }
      if (product != want) {
        std::string fix;
        if (b.micro_batch_size > 0 && b.dp > 0 && want % (b.micro_batch_size * b.dp) == 0) {
          fix = fmt::format("set gradient_accumulation_steps to {} (= {} / ({} × {}))",
                            want / (b.micro_batch_size * b.dp), want, b.micro_batch_size, b.dp);
        } else if (b.grad_accum > 0 && b.dp > 0 && want % (b.grad_accum * b.dp) == 0) {
          fix = fmt::format("set micro_batch_size to {} (= {} / ({} × {}))",
                            want / (b.grad_accum * b.dp), want, b.grad_accum, b.dp);
        } else {
          fix = fmt::format("choose micro × accum × dp = {}", want);
        }
        return certain(
            fail(name,
                 fmt::format("rank {} runs {} samples/step ({} × {} × {}) but {} has {}: {}",
                             r.rank, product, b.micro_batch_size, b.grad_accum, b.dp,
                             reference ? "the baseline" : "the plan", want, fix),
                 {evidence_of(b, line)}),
            -1);
      }
    }
    for (const logs::StepRecord& s : r.steps) {
      if (!s.samples_per_step) continue;
      ++compared;
      if (*s.samples_per_step != want) {
        CheckResult result =
            fail(name,
                 fmt::format("step {} logs samples_per_step {}, expected {}", s.global_step,
                             *s.samples_per_step, want),
                 {evidence_of(s, fmt::format("step {} samples_per_step={}", s.global_step,
                                             *s.samples_per_step))});
        result.certain_at = s.global_step;
        return result;
      }
    }
  }
  if (compared == 0)
    return not_logged(ctx.evidence, name,
                      "no `batch` event and no step with samples_per_step: nothing to compare",
                      {"samples_per_step"});
  return pass(name, fmt::format("{} samples/step everywhere ({} values, {})", want, compared,
                                reference ? "equal to the baseline" : "as planned"));
}

CheckResult check_fields_present(const CheckContext& ctx) {
  const char* name = "fields_present";
  if (ctx.evidence.ranks.empty()) return fail(name, "no rank logs: nothing to check");
  const auto events = ctx.params.strings("required_events", {"run", "batch", "model", "done"});
  const auto fields =
      ctx.params.strings("required_step_fields", {"loss", "grad_norm", "lr", "samples_per_step"});
  const RankEvidence* owner = ctx.evidence.step_owner();
  // What the trainer logs nowhere is one unobservable cause each; what some ranks or steps
  // log and others do not is a failure (the trainer can log it, but did not everywhere).
  std::vector<std::string> never;
  std::vector<CheckEvidence> missing;
  for (const std::string& ev : events) {
    std::vector<CheckEvidence> lacking;
    bool anywhere = false;
    for (const RankEvidence& r : ctx.evidence.ranks) {
      // A rank that did not exit cleanly had no chance to finish; exit_status and finite_loss
      // judge that, not a missing last line.
      const bool cut_short = (r.exit.stopped_at_non_finite || (r.exit.known && !r.exit.clean())) &&
                             (ev == "done" || ev == "digest");
      if (logged_event(r, ev)) {
        anywhere = true;
      } else if (!cut_short) {
        lacking.push_back(
            CheckEvidence{r.rank, 0, fmt::format("rank {}: no `{}` event", r.rank, ev)});
      }
    }
    if (!anywhere && !lacking.empty() && owner) {
      never.push_back(ev);
    } else {
      missing.insert(missing.end(), lacking.begin(), lacking.end());
    }
  }
  if (!owner) {
    missing.push_back(CheckEvidence{
        -1, 0,
        "no rank logged a `step` event (a trainer that prints its steps in a format of its "
        "own: map it with trainer.log_format = \"regex\" and [logs.fields]; `bigmac-bringup "
        "parse --records -c CONFIG LOG` shows what is read)"});
  } else {
    for (const std::string& f : fields) {
      const bool anywhere = std::any_of(owner->steps.begin(), owner->steps.end(),
                                        [&](const logs::StepRecord& s) { return step_has(s, f); });
      if (!anywhere) {
        never.push_back(f);
        continue;
      }
      for (const logs::StepRecord& s : owner->steps) {
        if (!step_has(s, f)) {
          missing.push_back(evidence_of(s, fmt::format("step {} has no {}", s.global_step, f)));
          break;
        }
      }
    }
  }
  if (!missing.empty()) {
    for (const std::string& f : never)
      missing.push_back(CheckEvidence{-1, 0, fmt::format("{} is logged nowhere", f)});
    const std::string first = missing.front().text;
    const std::size_t count = missing.size();
    return fail(name,
                fmt::format("{} missing field{}; first: {}", count, count == 1 ? "" : "s", first),
                std::move(missing));
  }
  if (!never.empty()) {
    return unobservable(name, fmt::format("the trainer logs no {}", fmt::join(never, ", ")), never);
  }
  return pass(name, fmt::format("{} ranks logged {} event kinds; {} steps carry {} fields",
                                ctx.evidence.ranks.size(), events.size(), owner->steps.size(),
                                fields.size()));
}

}  // namespace bigmac::gates
