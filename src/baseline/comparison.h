#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baseline/band.h"
#include "baseline/baseline.h"
#include "core/error.h"

namespace bigmac::baseline {

/// How close two values of a metric must be for the tolerance check.
enum class Policy {
  kExact,      ///< bit-for-bit equal
  kRelative,   ///< |a - b| <= rel_tol × |b| + abs_tol
  kMagnitude,  ///< same sign and a / b within [1 / factor, factor]
  kBand,       ///< the moving average within the baseline's own noise (baseline/band.h)
};

std::string_view policy_name(Policy policy);
Expected<Policy> parse_policy(std::string_view text);

struct Tolerance {
  Policy policy = Policy::kRelative;
  double rel_tol = 1e-4;
  double abs_tol = 0;
  double factor = 10;  ///< magnitude policy
  BandRule band{};     ///< band policy (rel_tol is its narrowest half-width)
  /// band policy: the baseline's noise, once a comparison has measured it (sigma 0 before).
  SeriesNoise band_noise{};

  std::string describe() const;  ///< "relative 1e-4", "magnitude ×10", "exact", "band 5σ …"

 private:
  std::string describe_band() const;
};

/// |observed - reference| / |reference| (0 when equal, infinite when either is not finite).
double relative_difference(double observed, double reference);

/// Whether `observed` is within `tolerance` of `reference`: the test every comparison applies
/// to one step. The band policy judges a series (compare_metric); one step alone is judged
/// against the baseline's per-step noise in `band_noise` (baseline/band.h single_step_band).
bool within_tolerance(double observed, double reference, const Tolerance& tolerance);

/// The values within_tolerance accepts for `reference`, as [low, high].
std::pair<double, double> tolerance_range(double reference, const Tolerance& tolerance);

/// Which per-step value a comparison reads.
enum class Metric { kLoss, kGradNorm, kLr, kSamplesPerStep };

std::string_view metric_name(Metric metric);

/// The tolerance a metric is compared with when no gate parameter sets one — relative: loss
/// 1e-4, grad_norm 1e-3, lr 1e-9; samples/step exact. Gates, `compare` and the diagnosis all
/// start from here.
Tolerance default_tolerance(Metric metric);

/// `metric` of every baseline step by its global_step (the index), up to its last step: empty
/// where a step has no value; a step stored twice keeps its later entry; negative steps are
/// left out. The diagnosis rules read a baseline's values so.
std::vector<std::optional<double>> values_by_step(const Baseline& baseline, Metric metric);

/// The exact and the tolerance check of one metric, side by side, over the steps both have.
struct MetricComparison {
  Metric metric = Metric::kLoss;
  Tolerance tolerance;
  std::int64_t compared = 0;  ///< steps present on both sides with a value on both
  std::int64_t missing = 0;   ///< baseline steps the run lacks (or lacks the value of)
  std::optional<std::int64_t> first_missing_step;
  bool exact = false;   ///< every compared value bit-equal (false when nothing compared)
  bool within = false;  ///< every compared value within tolerance (idem)
  std::optional<std::int64_t> first_inexact_step;
  std::optional<std::int64_t> first_divergent_step;  ///< first step outside the tolerance
  double max_rel_diff = 0;
  std::int64_t max_rel_diff_step = -1;
  double baseline_value = 0;  ///< at first_divergent_step (else at max_rel_diff_step)
  double observed_value = 0;  ///< band policy: both are moving averages
  /// band policy: the smoothed comparison; a divergence is certain at band->confirmed_at.
  std::optional<BandComparison> band;
};

/// Compares one metric of `observed` against `reference`, step by step (matched by global_step).
MetricComparison compare_metric(const Baseline& reference, const Baseline& observed, Metric metric,
                                const Tolerance& tolerance);

/// Whether a failed tolerance check of a run that is still going (its first steps only) is
/// final: no later step can undo it. Every policy states it: exact, relative and magnitude judge
/// each step on its own, so the first divergent step is final; band reports a divergence only
/// once `confirm` smoothed points whose windows the run has logged lie outside it, so it is
/// final from band->confirmed_at. A run that is stopped as soon as this holds is judged on what
/// it logged so far.
bool divergence_is_certain(const MetricComparison& comparison);

/// The step since which a certain divergence is certain: the first divergent step, or for the
/// band the last step its confirmation read.
std::optional<std::int64_t> divergence_certain_at(const MetricComparison& comparison);

/// The named outcome of DESIGN §4.
enum class Outcome {
  kMatch,        ///< exact and tolerance checks pass
  kDrift,        ///< only the tolerance check passes
  kRegression,   ///< the tolerance check fails
  kIncomplete,   ///< what was compared agrees, but baseline steps are missing: a failure
  kOtherLength,  ///< what was compared agrees, but the run logs steps the baseline has not
  kNothing,      ///< nothing was compared: a failure, never a pass
};

std::string_view outcome_name(Outcome outcome);

/// A whole-run comparison: each metric, the overall outcome and, for drift, the likely reason.
struct Comparison {
  std::vector<MetricComparison> metrics;
  Outcome outcome = Outcome::kNothing;
  std::string reason;  ///< drift: "other fingerprint: device cuda vs cpu"; regression: step/metric
  /// fingerprint_difference(observed, reference) whatever the outcome: a baseline recorded on
  /// another device, dtype or torch is named even when the numbers agree.
  std::string other_fingerprint;
  bool passed() const { return outcome == Outcome::kMatch || outcome == Outcome::kDrift; }
};

/// Tolerances per metric for compare_runs; metrics left empty are not compared.
struct ComparisonPolicy {
  std::optional<Tolerance> loss = default_tolerance(Metric::kLoss);
  std::optional<Tolerance> grad_norm = default_tolerance(Metric::kGradNorm);
  std::optional<Tolerance> lr = default_tolerance(Metric::kLr);
  std::optional<Tolerance> samples_per_step = default_tolerance(Metric::kSamplesPerStep);
};

Comparison compare_runs(const Baseline& reference, const Baseline& observed,
                        const ComparisonPolicy& policy = {});

/// The fingerprint fields that differ, as "device cuda vs cpu, dtype bf16 vs float32".
std::string fingerprint_difference(const Fingerprint& observed, const Fingerprint& reference);

/// Multi-line text of a comparison for the terminal.
std::string format_comparison(const Comparison& comparison);

}  // namespace bigmac::baseline
