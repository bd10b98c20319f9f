#pragma once

#include <string>
#include <vector>

namespace bigmac::report {

/// The labelled values of one chart axis and the range they span: a few round numbers
/// (1, 2 or 5 × 10^k apart, Heckbert's "nice numbers for graph labels"), so a reader sees
/// 3.6 3.8 4 4.2 rather than 3.5765 and 4.2.
struct AxisTicks {
  double lo = 0, hi = 1;  ///< the axis range: the data range widened to the outer ticks
  std::vector<double> values;
  bool log = false;  ///< values are powers of ten on a log axis
  double step = 1;   ///< distance between ticks (linear), or decades between ticks (log)

  /// A tick value as text with as many decimals as the spacing needs ("0.05", "4", "1e-06").
  std::string label(double value) const;
};

/// About `target` round ticks covering [lo, hi] (lo <= hi; equal ends are widened first).
/// `integers` keeps the spacing at 1 or more (step numbers).
AxisTicks nice_ticks(double lo, double hi, int target = 5, bool integers = false);

/// Powers of ten covering [lo, hi] (both > 0), every decade or every k-th one so that at most
/// about `target` remain.
AxisTicks log_ticks(double lo, double hi, int target = 5);

}  // namespace bigmac::report
