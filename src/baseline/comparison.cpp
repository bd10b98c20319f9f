#include "baseline/comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace bigmac::baseline {
namespace {

std::optional<double> value_of(const BaselineStep& s, Metric metric) {
  switch (metric) {
    case Metric::kLoss:
      return s.loss;
    case Metric::kGradNorm:
      return s.grad_norm;
    case Metric::kLr:
      return s.lr;
    case Metric::kSamplesPerStep:
      if (s.samples_per_step) return static_cast<double>(*s.samples_per_step);
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<SeriesValue> series_of(const Baseline& b, Metric metric) {
  std::vector<SeriesValue> out;
  for (const BaselineStep& s : b.steps) {
    if (auto v = value_of(s, metric)) out.push_back({s.global_step, *v});
  }
  return out;
}

// The band replaces the step-by-step verdict: within and the first divergent step come from the
// moving averages (steps, exactness and the largest single-step difference stay as counted).
void judge_as_band(const Baseline& reference, const std::map<std::int64_t, double>& seen,
                   Metric metric, MetricComparison& c) {
  std::vector<SeriesValue> observed;
  for (const auto& [step, value] : seen) observed.push_back({step, value});
  const std::vector<SeriesValue> ref = series_of(reference, metric);
  BandComparison band = compare_band(ref, observed, c.tolerance.band, c.tolerance.rel_tol);
  c.tolerance.band_noise = band.noise;
  c.first_divergent_step.reset();
  c.within = c.compared > 0 && !band.first_divergent;
  if (band.first_divergent) {
    const BandPoint& p = band.judged[*band.first_divergent];
    c.first_divergent_step = p.step;
    c.baseline_value = p.baseline;
    c.observed_value = p.observed;
  }
  c.band = std::move(band);
}

}  // namespace

double relative_difference(double observed, double reference) {
  if (observed == reference) return 0;
  if (!std::isfinite(observed) || !std::isfinite(reference)) return INFINITY;
  const double scale = std::max(std::fabs(reference), 1e-30);
  return std::fabs(observed - reference) / scale;
}

bool within_tolerance(double observed, double reference, const Tolerance& t) {
  if (!std::isfinite(observed) || !std::isfinite(reference)) return false;
  switch (t.policy) {
    case Policy::kExact:
      return observed == reference;
    case Policy::kRelative:
      return std::fabs(observed - reference) <= t.rel_tol * std::fabs(reference) + t.abs_tol;
    case Policy::kMagnitude:
      if (observed == reference) return true;
      if (observed == 0 || reference == 0 || (observed > 0) != (reference > 0)) return false;
      return observed / reference <= t.factor && reference / observed <= t.factor;
    case Policy::kBand: {
      const auto [low, high] = tolerance_range(reference, t);
      return observed >= low && observed <= high;
    }
  }
  return false;
}

std::pair<double, double> tolerance_range(double reference, const Tolerance& t) {
  switch (t.policy) {
    case Policy::kExact:
      return {reference, reference};
    case Policy::kRelative: {
      const double room = t.rel_tol * std::fabs(reference) + t.abs_tol;
      return {reference - room, reference + room};
    }
    case Policy::kMagnitude:
      if (reference == 0) return {0, 0};
      return {std::min(reference / t.factor, reference * t.factor),
              std::max(reference / t.factor, reference * t.factor)};
    case Policy::kBand:
      return single_step_band(reference, t.band_noise, t.band.sigmas, t.rel_tol);
  }
  return {reference, reference};
}

std::string_view policy_name(Policy policy) {
  switch (policy) {
    case Policy::kExact:
      return "exact";
    case Policy::kRelative:
      return "relative";
    case Policy::kMagnitude:
      return "magnitude";
    case Policy::kBand:
      return "band";
  }
  return "?";
}

Expected<Policy> parse_policy(std::string_view text) {
  if (text == "exact") return Policy::kExact;
  if (text == "relative") return Policy::kRelative;
  if (text == "magnitude") return Policy::kMagnitude;
  if (text == "band") return Policy::kBand;
  return tl::unexpected(make_error(ErrorKind::kConfig,
                                   fmt::format("unknown comparison policy '{}'", text),
                                   "use exact, relative, magnitude or band"));
}

std::string Tolerance::describe() const {
  switch (policy) {
    case Policy::kExact:
      return "exact";
    case Policy::kRelative:
      return abs_tol > 0 ? fmt::format("relative {:g} + abs {:g}", rel_tol, abs_tol)
                         : fmt::format("relative {:g}", rel_tol);
    case Policy::kMagnitude:
      return fmt::format("magnitude ×{:g}", factor);
    case Policy::kBand:
      return describe_band();
  }
  return "?";
}

std::string Tolerance::describe_band() const {
  std::string noise = fmt::format("noise not measured, floor relative {:g}", rel_tol);
  if (band_noise.residuals > 0) {
    noise = band_noise.log_scale
                ? fmt::format("noise σ {:.3g}%", 100 * std::expm1(band_noise.sigma))
                : fmt::format("noise σ {:.3g}", band_noise.sigma);
  }
  return fmt::format(
      "band {:g}σ of the baseline's step-to-step {}, {}-step moving average, {} "
      "steps outside to confirm",
      band.sigmas, noise, band.window, band.confirm);
}

Tolerance default_tolerance(Metric metric) {
  switch (metric) {
    case Metric::kLoss:
      return Tolerance{Policy::kRelative, 1e-4, 0, 10};
    case Metric::kGradNorm:
      return Tolerance{Policy::kRelative, 1e-3, 0, 10};
    case Metric::kLr:
      return Tolerance{Policy::kRelative, 1e-9, 0, 10};
    case Metric::kSamplesPerStep:
      break;
  }
  return Tolerance{Policy::kExact, 0, 0, 10};
}

std::string_view metric_name(Metric metric) {
  switch (metric) {
    case Metric::kLoss:
      return "loss";
    case Metric::kGradNorm:
      return "grad_norm";
    case Metric::kLr:
      return "lr";
    case Metric::kSamplesPerStep:
      return "samples_per_step";
  }
  return "?";
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kMatch:
      return "match";
    case Outcome::kDrift:
      return "drift";
    case Outcome::kRegression:
      return "regression";
    case Outcome::kIncomplete:
      return "incomplete";
    case Outcome::kOtherLength:
      return "other length";
    case Outcome::kNothing:
      return "nothing compared";
  }
  return "?";
}

std::vector<std::optional<double>> values_by_step(const Baseline& baseline, Metric metric) {
  std::vector<std::optional<double>> out;
  for (const BaselineStep& s : baseline.steps) {
    if (s.global_step < 0) continue;
    const auto at = static_cast<std::size_t>(s.global_step);
    if (at >= out.size()) out.resize(at + 1);
    out[at] = value_of(s, metric);
  }
  return out;
}

MetricComparison compare_metric(const Baseline& reference, const Baseline& observed, Metric metric,
                                const Tolerance& tolerance) {
  MetricComparison c;
  c.metric = metric;
  c.tolerance = tolerance;
  std::map<std::int64_t, double> seen;
  for (const BaselineStep& s : observed.steps) {
    if (auto v = value_of(s, metric); v && !seen.count(s.global_step)) seen[s.global_step] = *v;
  }
  bool exact = true, within = true;
  for (const BaselineStep& s : reference.steps) {
    const auto ref = value_of(s, metric);
    const auto it = seen.find(s.global_step);
    if (!ref || it == seen.end()) {
      ++c.missing;
      if (!c.first_missing_step) c.first_missing_step = s.global_step;
      continue;
    }
    ++c.compared;
    const double obs = it->second;
    const double rel = relative_difference(obs, *ref);
    if (obs != *ref && !c.first_inexact_step) c.first_inexact_step = s.global_step;
    exact = exact && obs == *ref;
    if (c.max_rel_diff_step < 0 || rel > c.max_rel_diff) {
      c.max_rel_diff = rel;
      c.max_rel_diff_step = s.global_step;
      if (!c.first_divergent_step) {
        c.baseline_value = *ref;
        c.observed_value = obs;
      }
    }
    if (!within_tolerance(obs, *ref, tolerance)) {
      if (!c.first_divergent_step) {
        c.first_divergent_step = s.global_step;
        c.baseline_value = *ref;
        c.observed_value = obs;
      }
      within = false;
    }
  }
  c.exact = c.compared > 0 && exact;
  c.within = c.compared > 0 && within;
  if (tolerance.policy == Policy::kBand) judge_as_band(reference, seen, metric, c);
  return c;
}

bool divergence_is_certain(const MetricComparison& c) {
  if (!c.first_divergent_step) return false;
  switch (c.tolerance.policy) {
    case Policy::kExact:
    case Policy::kRelative:
    case Policy::kMagnitude:
      return true;
    case Policy::kBand:
      return c.band && c.band->confirmed_at.has_value();
  }
  return false;
}

std::optional<std::int64_t> divergence_certain_at(const MetricComparison& c) {
  if (!divergence_is_certain(c)) return std::nullopt;
  if (c.tolerance.policy == Policy::kBand) return c.band->confirmed_at;
  return c.first_divergent_step;
}

std::string fingerprint_difference(const Fingerprint& o, const Fingerprint& r) {
  std::vector<std::string> parts;
  auto add = [&](const char* name, const std::string& a, const std::string& b) {
    if (a != b && !a.empty() && !b.empty()) parts.push_back(fmt::format("{} {} vs {}", name, a, b));
  };
  add("tool", o.tool_version, r.tool_version);
  add("torch", o.torch_version, r.torch_version);
  // A single process has no backend ("none"); that difference is the world size, not a setup.
  if (o.backend != "none" && r.backend != "none") add("backend", o.backend, r.backend);
  add("device", o.device, r.device);
  add("dtype", o.dtype, r.dtype);
  if (o.seed && r.seed && *o.seed != *r.seed)
    parts.push_back(fmt::format("seed {} vs {}", *o.seed, *r.seed));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

Comparison compare_runs(const Baseline& reference, const Baseline& observed,
                        const ComparisonPolicy& policy) {
  Comparison out;
  const std::pair<Metric, const std::optional<Tolerance>*> wanted[] = {
      {Metric::kLoss, &policy.loss},
      {Metric::kGradNorm, &policy.grad_norm},
      {Metric::kLr, &policy.lr},
      {Metric::kSamplesPerStep, &policy.samples_per_step}};
  for (const auto& [metric, tolerance] : wanted) {
    if (*tolerance) out.metrics.push_back(compare_metric(reference, observed, metric, **tolerance));
  }
  const MetricComparison* worst = nullptr;
  const MetricComparison* short_of = nullptr;  // compared, but some baseline steps missing
  bool any = false, all_within = true, all_exact = true;
  for (const MetricComparison& m : out.metrics) {
    if (m.compared == 0) continue;
    any = true;
    if (m.missing > 0 && !short_of) short_of = &m;
    all_exact = all_exact && m.exact;
    if (!m.within) {
      all_within = false;
      if (!worst || *m.first_divergent_step < *worst->first_divergent_step) worst = &m;
    }
  }
  // Steps the run logs past (or between) the baseline's: 25 steps against 20 are no match.
  std::set<std::int64_t> reference_steps;
  for (const BaselineStep& s : reference.steps) reference_steps.insert(s.global_step);
  std::int64_t extra = 0;
  std::optional<std::int64_t> first_extra;
  for (const BaselineStep& s : observed.steps) {
    if (reference_steps.count(s.global_step) > 0) continue;
    ++extra;
    if (!first_extra) first_extra = s.global_step;
  }
  out.other_fingerprint = fingerprint_difference(observed.fingerprint, reference.fingerprint);
  if (!any) {
    out.outcome = Outcome::kNothing;
    out.reason = "no step has a value on both sides";
  } else if (!all_within) {
    out.outcome = Outcome::kRegression;
    out.reason =
        fmt::format("{} diverges at step {}: {:.6g} vs baseline {:.6g} (outside {})",
                    metric_name(worst->metric), *worst->first_divergent_step, worst->observed_value,
                    worst->baseline_value, worst->tolerance.describe());
  } else if (extra > 0) {
    out.outcome = Outcome::kOtherLength;
    out.reason = fmt::format(
        "the log has {} step{} the baseline's {} have not (first: step {}); a run compared with "
        "a baseline runs the same steps",
        extra, extra == 1 ? "" : "s", reference.steps.size(), *first_extra);
  } else if (short_of) {
    // Two matching steps of twenty say nothing about the other eighteen.
    out.outcome = Outcome::kIncomplete;
    out.reason = fmt::format(
        "only {} of the baseline's {} steps with {} are in the log{}", short_of->compared,
        short_of->compared + short_of->missing, metric_name(short_of->metric),
        short_of->first_missing_step
            ? fmt::format(" (first missing: step {})", *short_of->first_missing_step)
            : "");
  } else if (!all_exact) {
    out.outcome = Outcome::kDrift;
    const std::string diff = fingerprint_difference(observed.fingerprint, reference.fingerprint);
    if (!diff.empty()) {
      out.reason = "other fingerprint: " + diff;
    } else if (observed.fingerprint.world_size != reference.fingerprint.world_size &&
               observed.fingerprint.world_size > 0 && reference.fingerprint.world_size > 0) {
      out.reason = fmt::format("reduction order: {} ranks vs {} in the baseline",
                               observed.fingerprint.world_size, reference.fingerprint.world_size);
    } else {
      out.reason = "reduction order or a non-deterministic kernel (same fingerprint)";
    }
  } else {
    out.outcome = Outcome::kMatch;
  }
  return out;
}

std::string format_comparison(const Comparison& c) {
  std::string out = fmt::format("comparison: {}", outcome_name(c.outcome));
  if (!c.reason.empty()) out += " — " + c.reason;
  out += "\n";
  if (!c.other_fingerprint.empty() && c.reason.find(c.other_fingerprint) == std::string::npos) {
    out +=
        "  note: the baseline was recorded with another fingerprint (this log vs the "
        "baseline: " +
        c.other_fingerprint + ")\n";
  }
  for (const MetricComparison& m : c.metrics) {
    out += fmt::format("  {:<16} {:>3} steps  exact {:<3}  {:<20} {:<4}  max rel diff {:.3g}",
                       metric_name(m.metric), m.compared, m.exact ? "yes" : "no",
                       m.tolerance.describe(), m.within ? "ok" : "FAIL", m.max_rel_diff);
    if (m.max_rel_diff_step >= 0) out += fmt::format(" at step {}", m.max_rel_diff_step);
    if (m.first_divergent_step)
      out += fmt::format(", first divergent step {}", *m.first_divergent_step);
    if (m.missing > 0) out += fmt::format(", {} baseline steps missing", m.missing);
    out += "\n";
  }
  return out;
}

}  // namespace bigmac::baseline
