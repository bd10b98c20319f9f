#include "gates/step_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "baseline/step_series.h"
#include "gates/observability.h"
#include "gates/series_rules.h"
#include "launch/trainer_invocation.h"

namespace bigmac::gates {
namespace {

const std::vector<logs::StepRecord>* owner_steps(const CheckContext& ctx) {
  const RankEvidence* owner = ctx.evidence.owner();
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
  for (const logs::StepRecord& s : *steps) {
    if (!s.loss && !(s.grad_norm && !std::isfinite(*s.grad_norm))) {
      return fail(name, fmt::format("step {} has no loss", s.global_step),
                  {evidence_of(s, fmt::format("step {} without loss", s.global_step))});
    }
  }
  if (const auto bad = baseline::first_non_finite_loss(*steps)) {
    const logs::StepRecord& s = (*steps)[bad->index];
    const std::string what = bad->from_grad_norm ? "grad_norm (no loss logged)" : "loss";
    return certain(
        fail(name,
             fmt::format("{} is {} at step {} (after {} finite steps)", what, bad->value,
                         s.global_step, bad->index),
             {evidence_of(s, fmt::format("step {} {}={}", s.global_step,
                                         bad->from_grad_norm ? "grad_norm" : "loss", bad->value))}),
        s.global_step);
  }
  const std::size_t checked = steps->size();
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
  const baseline::GrowthRule rule = growth_rule(ctx.params);
  const baseline::GrowthScan scan = baseline::scan_grad_norm_growth(*steps, rule);
  if (scan.growth) {
    const logs::StepRecord& from = (*steps)[scan.growth->before];
    const logs::StepRecord& first = (*steps)[scan.growth->before + 1];
    const logs::StepRecord& cur = (*steps)[scan.growth->last];
    return fail(name,
                fmt::format("grad_norm grew more than ×{:g} for {} consecutive steps ({} -> {}: "
                            "{:.6g} -> {:.6g})",
                            rule.factor, scan.growth->run, from.global_step, cur.global_step,
                            from.grad_norm.value_or(0), cur.grad_norm.value_or(0)),
                {evidence_of(first, fmt::format("step {} grad_norm={:.6g}", first.global_step,
                                                first.grad_norm.value_or(0))),
                 evidence_of(cur, fmt::format("step {} grad_norm={:.6g}", cur.global_step,
                                              cur.grad_norm.value_or(0)))});
  }
  if (scan.compared == 0)
    return fail(name, "fewer than two steps with a grad_norm: nothing to compare");
  return pass(name, fmt::format("grad_norm never grew ×{:g} for {} steps in a row ({} step pairs, "
                                "largest step-over-step ratio {:.3g})",
                                rule.factor, rule.steps, scan.compared, scan.largest_ratio));
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
  const baseline::SequenceScan scan = baseline::scan_step_sequence(*steps);
  // A step logged twice or out of order stays so whatever comes next.
  if (scan.broken) {
    const baseline::SequenceBreak& b = *scan.broken;
    const logs::StepRecord& s = (*steps)[b.index];
    CheckResult r =
        b.kind == baseline::SequenceBreak::kRepeated
            ? fail(name, fmt::format("global_step {} logged twice", b.found),
                   {evidence_of(s, fmt::format("duplicate step {}", b.found))})
            : fail(name,
                   fmt::format("expected global_step {} next, found {}{}", b.expected, b.found,
                               b.found > b.expected
                                   ? fmt::format(" (gap of {})", b.found - b.expected)
                                   : ""),
                   {evidence_of(s, fmt::format("step {}", b.found))});
    return certain(std::move(r), b.found);
  }
  // A trainer that logs every k-th step logs the steps first, first + k, … below `expected`.
  const std::int64_t first = steps->front().global_step;
  const std::int64_t want =
      scan.interval == 1 ? expected : (expected - first + scan.interval - 1) / scan.interval;
  const std::int64_t logged = scan.in_order;
  const std::string every =
      scan.interval == 1 ? std::string() : fmt::format(", logged every {} steps", scan.interval);
  // Without a baseline yet (the first gate) a program whose data or epochs end before the
  // gate's count sets the count: every rank ended by itself, cleanly, after `logged` steps in
  // order. The baseline then has that many, and every later gate is held to it.
  const bool ended_by_itself =
      std::all_of(ctx.evidence.ranks.begin(), ctx.evidence.ranks.end(), [](const RankEvidence& r) {
        return r.exit.known && r.exit.clean() && !r.exit.bounded && !r.exit.stopped;
      });
  if (logged < want && !(ctx.baseline && !ctx.baseline->steps.empty()) && ended_by_itself &&
      scan.interval == 1 && first == 0) {
    return pass(name, fmt::format("steps 0..{} in order: the program ended by itself after {} of "
                                  "the {} steps asked (its data or epochs end first); later "
                                  "gates are held to {}",
                                  steps->back().global_step, logged, want, logged));
  }
  if (logged != want) {
    CheckResult r =
        fail(name,
             fmt::format("{} steps logged ({}..{}{}), expected {} ({})", logged, first,
                         steps->back().global_step, every, want, source),
             {evidence_of(steps->back(), fmt::format("last step {}", steps->back().global_step))});
    if (logged > want) r.certain_at = expected;  // too few can still grow; too many cannot
    return r;
  }
  return pass(name, fmt::format("steps {}..{} in order{}, {} as {}", first,
                                steps->back().global_step, every, logged, source));
}

// Why a rank ran another micro-batch or accumulation than the gate handed it, when the program
// model (trainer.batch_scope, accum_scope) or the command explains it: a fix that names a value
// the program never receives would be followed in vain.
std::string program_model_hint(const config::Config& c, const logs::BatchRecord& b) {
  const std::int64_t dp = c.derived.dp;
  const std::int64_t micro = c.train.micro_batch_size;
  const std::int64_t accum = c.train.gradient_accumulation_steps;
  if (!launch::trainer_receives(c, "micro_batch_size") &&
      !launch::trainer_receives(c, "grad_accum") && dp > 1) {
    return fmt::format(
        "the program takes neither its batch size nor its accumulation from the gates (no "
        "{{micro_batch_size}} or {{grad_accum}} in trainer.command), so each of the {} ranks "
        "runs the single process's whole step; the one change that keeps samples/step: give the "
        "program a flag for its per-process batch size and put {{micro_batch_size}} in "
        "trainer.command (`adopt` finds it)",
        dp);
  }
  if (b.micro_batch_size > 0 && b.micro_batch_size != micro) {
    if (!launch::trainer_receives(c, "micro_batch_size")) {
      return fmt::format(
          "the program's micro-batch is its own ({}): no {{micro_batch_size}} in "
          "trainer.command, so the gates cannot keep samples/step; give the program a batch-size "
          "flag and put the placeholder in trainer.command (`adopt` finds it)",
          b.micro_batch_size);
    }
    if (c.trainer.batch_scope == "process" && dp > 1 && b.micro_batch_size * dp == micro) {
      return fmt::format(
          "the program divides its batch flag by the world size ({} / {} = {}): set "
          "trainer.batch_scope = \"global\"",
          micro, dp, b.micro_batch_size);
    }
  }
  if (b.grad_accum > 0 && b.grad_accum != accum) {
    if (!launch::trainer_receives(c, "grad_accum")) {
      return fmt::format(
          "the program's accumulation is its own ({} micro-batches a step): no {{grad_accum}} in "
          "trainer.command, so the gates cannot change it",
          b.grad_accum);
    }
    if (c.trainer.accum_scope == "process" && dp > 1 && b.grad_accum * dp == accum) {
      return fmt::format(
          "the program divides its accumulation flag by the world size ({} / {} = {}): set "
          "trainer.accum_scope = \"divided\"",
          accum, dp, b.grad_accum);
    }
  }
  return {};
}

std::string samples_per_step_fix(const config::Config& c, const logs::BatchRecord& b,
                                 std::int64_t want) {
  std::string fix = program_model_hint(c, b);
  if (fix.empty()) {
    fix = baseline::samples_per_step_fix(want, b.micro_batch_size, b.grad_accum, b.dp);
  }
  return fix;
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
        const std::string fix = samples_per_step_fix(ctx.plan.config, b, want);
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
  auto events = ctx.params.strings("required_events", {"run", "batch", "model", "done"});
  // A layout without pipeline stages has no stage to lay out and no micro-batch schedule.
  if (ctx.plan.config.parallel.pp_size == 1) {
    std::erase_if(events, [](const std::string& ev) { return ev == "layout" || ev == "mb"; });
  }
  const auto fields =
      ctx.params.strings("required_step_fields", {"loss", "grad_norm", "lr", "samples_per_step"});
  const RankEvidence* owner = ctx.evidence.owner();
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
      // Nor did one the orchestrator stopped at the step bound.
      const bool cut_short =
          (r.exit.stopped_at_non_finite || r.exit.bounded || (r.exit.known && !r.exit.clean())) &&
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
