#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/checked_integer.h"
#include "logs/record.h"

namespace bigmac::baseline {

// The judgements of a run's step series, made once: the gate checks (gates/) and the diagnosis
// rules (diagnose/) both call these, with the gate's parameters, so a gate never fails on a rule
// its diagnosis does not know (issue 17).

// Each scan takes a series in log order: any range whose elements `proj` turns into a
// logs::StepRecord (the gates keep records, the diagnosis keeps pointers with their file).

/// Whether rank `a` owns the run's step series rather than rank `b` (both logged steps): the
/// program's loss rank (trainer.loss_rank) does when it logged steps, else the lowest rank.
/// Under data parallelism every rank logs the same steps and one speaks for all; under a
/// pipeline only the ranks that hold the loss log steps, and the lowest of them speaks.
constexpr bool owns_series_before(int a, int b, int loss_rank = 0) {
  if (a == loss_rank || b == loss_rank) return a == loss_rank && b != loss_rank;
  return a < b;
}

/// The rank whose step series is the run's; nullptr when no rank logged a step. `Log` is
/// logs::RankLog or a type derived from it.
template <class Log>
const Log* series_owner(std::span<const Log> logs, int loss_rank = 0) {
  const Log* owner = nullptr;
  for (const Log& log : logs) {
    if (log.steps.empty()) continue;
    if (owner == nullptr || owns_series_before(log.rank, owner->rank, loss_rank)) owner = &log;
  }
  return owner;
}

/// grad_norm growing: more than ×factor from one step to the next, `steps` times in a row
/// (stages/01-single.toml [params] grad_norm_growth_factor / grad_norm_growth_steps).
struct GrowthRule {
  double factor = 1.5;
  int steps = 3;
};

/// The first run of growth the rule counts, to where it ends: indices into the series.
struct Growth {
  std::size_t before = 0;  ///< the step the growth starts from
  std::size_t last = 0;    ///< the last step of the run
  int run = 0;             ///< step-over-step ratios above the factor (or not finite) in a row
};

/// The first growth of grad_norm under `rule`; the pairs compared and the largest ratio seen.
struct GrowthScan {
  std::optional<Growth> growth;
  std::int64_t compared = 0;
  double largest_ratio = 0;
};
template <class Range, class Proj = std::identity>
GrowthScan scan_grad_norm_growth(const Range& steps, const GrowthRule& rule, Proj proj = {}) {
  GrowthScan out;
  int run = 0;
  for (std::size_t i = 1; i < std::size(steps); ++i) {
    const logs::StepRecord& prev = proj(steps[i - 1]);
    const logs::StepRecord& cur = proj(steps[i]);
    if (!prev.grad_norm || !cur.grad_norm || *prev.grad_norm <= 0) {
      run = 0;
      continue;
    }
    ++out.compared;
    const double ratio = *cur.grad_norm / *prev.grad_norm;
    out.largest_ratio = std::max(out.largest_ratio, ratio);
    run = (ratio > rule.factor || !std::isfinite(ratio)) ? run + 1 : 0;
    if (run >= rule.steps && !out.growth) {
      out.growth = Growth{i - static_cast<std::size_t>(run), i, run};
    } else if (run > 0 && out.growth && out.growth->last == i - 1) {
      out.growth->last = i;  // the first growth, to where it ends
      out.growth->run = run;
    }
  }
  return out;
}

/// The first step whose loss is not finite; a step that logs no loss but a non-finite grad_norm
/// counts too (Megatron stops printing the loss once it is NaN).
struct NonFinite {
  std::size_t index = 0;
  bool from_grad_norm = false;  ///< the loss was not logged; grad_norm is what is not finite
  double value = 0;
};
template <class Range, class Proj = std::identity>
std::optional<NonFinite> first_non_finite_loss(const Range& steps, Proj proj = {}) {
  for (std::size_t i = 0; i < std::size(steps); ++i) {
    const logs::StepRecord& s = proj(steps[i]);
    if (s.loss && !std::isfinite(*s.loss)) return NonFinite{i, false, *s.loss};
    if (!s.loss && s.grad_norm && !std::isfinite(*s.grad_norm)) {
      return NonFinite{i, true, *s.grad_norm};
    }
  }
  return std::nullopt;
}

/// Where the sequence 0, 1, 2, … (or 0, k, 2k, … for a trainer that logs every k-th step) breaks.
struct SequenceBreak {
  enum Kind { kRepeated, kUnexpected };
  Kind kind = kUnexpected;
  std::size_t index = 0;
  std::int64_t expected = 0;  ///< the step that should have come
  std::int64_t found = 0;
};
struct SequenceScan {
  std::int64_t interval = 1;  ///< the logging interval the series keeps (1: every step)
  std::int64_t in_order = 0;  ///< steps in order before the break (all when none)
  std::optional<SequenceBreak> broken;
  /// The first step logged twice anywhere in the series (also after `broken`).
  std::optional<SequenceBreak> repeated;
};

/// The logging interval of a series from its first steps: k when they are k apart and the first
/// is below k (Megatron's --log-interval), else 1.
std::int64_t logging_interval(std::int64_t first, std::int64_t second, std::int64_t third);

template <class Range, class Proj = std::identity>
SequenceScan scan_step_sequence(const Range& steps, Proj proj = {}) {
  SequenceScan out;
  const std::size_t n = std::size(steps);
  if (n >= 3) {
    out.interval = logging_interval(proj(steps[0]).global_step, proj(steps[1]).global_step,
                                    proj(steps[2]).global_step);
  }
  std::set<std::int64_t> seen;
  std::int64_t want = n == 0 || out.interval == 1 ? 0 : proj(steps[0]).global_step;
  bool in_order = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t step = proj(steps[i]).global_step;
    if (!seen.insert(step).second) {
      const SequenceBreak repeat{SequenceBreak::kRepeated, i, want, step};
      if (!out.repeated) out.repeated = repeat;
      if (in_order) out.broken = repeat;
      in_order = false;
      continue;
    }
    if (!in_order) continue;  // only a repeat is still looked for
    if (step != want) {
      out.broken = SequenceBreak{SequenceBreak::kUnexpected, i, want, step};
      in_order = false;
      continue;
    }
    ++out.in_order;
    // A log may name any step: the next one past int64 cannot come (core/checked_integer).
    const auto next = checked_add(want, out.interval);
    if (!next) {
      in_order = false;
      continue;
    }
    want = *next;
  }
  return out;
}

/// What keeps `want` samples per step with the other two factors as they are, in the words of
/// the settings (train.gradient_accumulation_steps, train.micro_batch_size); 0: factor unknown.
std::string samples_per_step_fix(std::int64_t want, std::int64_t micro, std::int64_t accum,
                                 std::int64_t dp);

}  // namespace bigmac::baseline
