#include "report/axis_ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace bigmac::report {
namespace {

/// A number of the form 1, 2 or 5 × 10^k near `x` (> 0): the nearest when `round`, else the
/// smallest not below it (Heckbert, Graphics Gems I, 1990).
double nice_number(double x, bool round) {
  const double exponent = std::floor(std::log10(x));
  const double fraction = x / std::pow(10.0, exponent);
  double nice = 10;
  if (round) {
    nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
  } else {
    nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  }
  return nice * std::pow(10.0, exponent);
}

int decade_of(double value) { return static_cast<int>(std::lround(std::log10(value))); }

}  // namespace

std::string AxisTicks::label(double value) const {
  if (log) {
    const int e = decade_of(value);
    return e >= -3 && e <= 4 ? fmt::format("{:g}", std::pow(10.0, e)) : fmt::format("1e{}", e);
  }
  if (std::fabs(value) < step * 1e-9) value = 0;  // -0 and 1e-17 are 0 on an axis
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  const double largest = std::max(std::fabs(lo), std::fabs(hi));
  if (largest >= 1e6 || (largest > 0 && largest < 1e-3) || decimals > 9) {
    // Mantissa digits enough to tell neighbouring ticks apart.
    const int digits = std::max(0, static_cast<int>(std::floor(std::log10(largest) + 1e-9)) -
                                       static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    return fmt::format("{:.{}e}", value, digits);
  }
  return fmt::format("{:.{}f}", value, decimals);
}

AxisTicks nice_ticks(double lo, double hi, int target, bool integers) {
  if (!(hi > lo)) {  // one value: give it room on both sides
    const double pad = integers ? 1 : lo == 0 ? 1 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  target = std::max(target, 2);
  const double range = nice_number(hi - lo, false);
  double step = nice_number(range / (target - 1), true);
  if (integers) step = std::max(step, 1.0);
  AxisTicks t;
  t.step = step;
  // A value a rounding error past a tick (4.0000000001) still starts at that tick.
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  t.lo = first * step;
  t.hi = last * step;
  for (double k = first; k <= last + 0.5; ++k) t.values.push_back(k * step);
  return t;
}

AxisTicks log_ticks(double lo, double hi, int target) {
  int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  const int stride = std::max(1, (e1 - e0 + std::max(target, 2) - 2) / (std::max(target, 2) - 1));
  e1 = e0 + (e1 - e0 + stride - 1) / stride * stride;
  AxisTicks t;
  t.log = true;
  t.step = stride;
  t.lo = std::pow(10.0, e0);
  t.hi = std::pow(10.0, e1);
  for (int e = e0; e <= e1; e += stride) t.values.push_back(std::pow(10.0, e));
  return t;
}

}  // namespace bigmac::report
