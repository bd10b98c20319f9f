#pragma once

#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/comparison.h"

namespace bigmac::baseline {

/// How two baselines differ: every metric compared exactly (first divergent step, max relative
/// difference), the structure and the fingerprint.
struct BaselineDiff {
  std::vector<MetricComparison> metrics;
  std::vector<std::string> structure;  ///< "param_count 1000 vs 1200", ...
  std::string fingerprint;             ///< fingerprint_difference text; empty when equal
  /// Where each was recorded (commit, trainer digest) and the settings that differ by key:
  /// shown to review an accepted change, never a difference of the numbers by themselves.
  std::vector<std::string> recorded;
  bool identical() const;
};

BaselineDiff diff_baselines(const Baseline& a, const Baseline& b);

std::string format_diff(const BaselineDiff& diff, const std::string& a_name,
                        const std::string& b_name);

}  // namespace bigmac::baseline
