#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/comparison.h"

namespace bigmac::baseline {

/// One input that differs between a baseline and a run: "torch 2.1.0 → 1.13.0".
struct InputChange {
  std::string what;  ///< "torch", "config train.warmup_steps", "param_digest", "trainer"
  std::string baseline;
  std::string observed;

  std::string describe() const;  ///< "torch 2.1.0 → 1.13.0"
};

/// Everything that differs between what a baseline was made from and what a run was made
/// from: fingerprint (tool, torch and Python versions, backend, device, dtype, seed), the
/// settings (by key when the baseline stored them, else by digest), the trainer's digest and
/// the model's structure (parameter count and digest, input shape and dtype). A value missing
/// on either side is unknown, not a difference.
std::vector<InputChange> input_changes(const Baseline& reference, const Baseline& observed);

/// A run of the first gate that no longer reproduces its stored baseline: what diverged first,
/// the exact and tolerance checks side by side, and what moved between the two.
struct Regression {
  std::string baseline_file;         ///< as the run named it: "baselines/demo-cpu.json"
  std::string metric;                ///< first divergent metric, or the structure field
  std::optional<std::int64_t> step;  ///< first divergent step; none: before the first step
  std::vector<MetricComparison> metrics;
  std::vector<InputChange> changes;
  bool trainer_known = false;   ///< both sides carry a trainer digest
  std::string baseline_commit;  ///< where the baseline was recorded; empty: not known

  /// "regression against baselines/demo-cpu.json at step 0 (loss)": what a CI page shows.
  std::string headline() const;
  /// The changed inputs, or that the numbers moved with the same inputs.
  std::string what_moved() const;
  /// One line per metric: the exact check and the tolerance check side by side.
  std::vector<std::string> side_by_side() const;
  /// Where to look for the change: the last commit the baseline passed at, when known.
  std::string last_good() const;
};

/// The regression of `observed` against `reference` (read from `file`) under `policy`; none
/// when every compared value is within tolerance and the model's structure is the same (a
/// failure that is not a baseline mismatch, such as a crash before the first step), and none
/// when the run logged a non-finite loss, grad_norm or lr: that is the gate's own finding
/// (finite_loss), and accepting it as the new baseline would record the fault.
std::optional<Regression> find_regression(const Baseline& reference, const std::string& file,
                                          const Baseline& observed, const ComparisonPolicy& policy);

}  // namespace bigmac::baseline
