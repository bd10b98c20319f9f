#include "baseline/band.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace bigmac::baseline {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 1.4826 × median |r| estimates the standard deviation of normal residuals without letting the
// knee of a falling curve (a few large residuals) widen the band.
constexpr double kMadToSigma = 1.4826;

bool all_positive(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v) && v > 0; });
}

// The value in the scale the band works in; NaN where that scale has none.
double scaled(double v, bool log_scale) {
  if (!std::isfinite(v)) return kNaN;
  if (!log_scale) return v;
  return v > 0 ? std::log(v) : kNaN;
}

double unscaled(double z, bool log_scale) { return log_scale ? std::exp(z) : z; }

// Indices [first, last] of the centred window of `i` in a series of `n`.
std::pair<std::size_t, std::size_t> window_of(std::size_t i, std::size_t n, int window) {
  const auto half = static_cast<std::size_t>(std::max(window, 1) / 2);
  return {i >= half ? i - half : 0, std::min(n - 1, i + half)};
}

double mean_over(std::span<const double> z, std::size_t first, std::size_t last) {
  double sum = 0;
  for (std::size_t j = first; j <= last; ++j) sum += z[j];
  return sum / static_cast<double>(last - first + 1);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

// The band's half-width, in the band's scale, around a moving average of `width` values.
double half_width(const SeriesNoise& noise, const BandRule& rule, std::size_t width,
                  double centre, double floor_rel) {
  const double spread =
      rule.sigmas * noise.sigma * std::sqrt(2.0 / static_cast<double>(std::max<std::size_t>(width, 1)));
  const double floor = noise.log_scale ? std::log1p(floor_rel) : floor_rel * std::fabs(centre);
  return std::max(spread, floor);
}

}  // namespace

SeriesNoise series_noise(std::span<const double> values, int window) {
  SeriesNoise out;
  out.log_scale = !values.empty() && all_positive(values);
  std::vector<double> z;
  for (double v : values) z.push_back(scaled(v, out.log_scale));
  if (std::any_of(z.begin(), z.end(), [](double x) { return std::isnan(x); })) return out;
  const std::size_t n = z.size();
  if (window < 3 || n < static_cast<std::size_t>(window) + 1) return out;
  std::vector<double> residuals;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [first, last] = window_of(i, n, window);
    residuals.push_back(std::fabs(z[i] - mean_over(z, first, last)));
  }
  out.residuals = residuals.size();
  // A residual around an average that includes the value itself is smaller by (w - 1) / w.
  const double w = static_cast<double>(window);
  out.sigma = kMadToSigma * median(std::move(residuals)) * std::sqrt(w / (w - 1));
  return out;
}

BandComparison compare_band(std::span<const SeriesValue> reference,
                            std::span<const SeriesValue> observed, const BandRule& rule,
                            double floor_rel) {
  BandComparison out;
  std::vector<double> ref;
  for (const SeriesValue& s : reference) ref.push_back(s.value);
  out.noise = series_noise(ref, rule.window);
  if (ref.empty()) return out;
  const bool log_scale = out.noise.log_scale;
  std::map<std::int64_t, double> seen;
  for (const SeriesValue& s : observed) seen.emplace(s.step, s.value);
  std::vector<double> zr, zo;
  std::vector<bool> present;
  for (const SeriesValue& s : reference) {
    zr.push_back(scaled(s.value, log_scale));
    const auto it = seen.find(s.step);
    present.push_back(it != seen.end());
    zo.push_back(it != seen.end() ? scaled(it->second, log_scale) : kNaN);
  }
  const std::size_t n = ref.size();
  const auto confirm = static_cast<std::size_t>(std::clamp<int>(rule.confirm, 1, static_cast<int>(n)));
  std::size_t run = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [first, last] = window_of(i, n, rule.window);
    if (!std::all_of(present.begin() + static_cast<std::ptrdiff_t>(first),
                     present.begin() + static_cast<std::ptrdiff_t>(last) + 1,
                     [](bool p) { return p; })) {
      ++out.unjudged;
      run = 0;  // a divergence is confirmed by consecutive judged points only
      continue;
    }
    const double centre = mean_over(zr, first, last);
    const double mine = mean_over(zo, first, last);  // NaN when a value is not finite
    const double room = half_width(out.noise, rule, last - first + 1, centre, floor_rel);
    BandPoint p;
    p.step = reference[i].step;
    p.baseline = unscaled(centre, log_scale);
    p.observed = std::isnan(mine) ? kNaN : unscaled(mine, log_scale);
    p.low = unscaled(centre - room, log_scale);
    p.high = unscaled(centre + room, log_scale);
    p.outside = std::isnan(mine) || std::fabs(mine - centre) > room;
    out.judged.push_back(p);
    run = p.outside ? run + 1 : 0;
    if (run == confirm && !out.first_divergent) {
      out.first_divergent = out.judged.size() - confirm;
      out.confirmed_at = reference[last].step;
    }
  }
  return out;
}

std::pair<double, double> single_step_band(double reference, const SeriesNoise& noise,
                                           double sigmas, double floor_rel) {
  const BandRule one{1, sigmas, 1};
  if (noise.log_scale && reference > 0) {
    const double room = half_width(noise, one, 1, std::log(reference), floor_rel);
    return {reference * std::exp(-room), reference * std::exp(room)};
  }
  const double room = half_width(SeriesNoise{false, noise.log_scale ? 0 : noise.sigma, 0}, one, 1,
                                 reference, floor_rel);
  return {reference - room, reference + room};
}

}  // namespace bigmac::baseline
