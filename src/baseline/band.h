#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace bigmac::baseline {

// The `band` comparison policy (issue 14 item 6). A trainer whose batches depend on the layout
// (a per-rank seed, a DistributedSampler) sees other samples under another layout, so no step
// matches the baseline; what must hold is that its curve is statistically the baseline's. The
// baseline's own step-to-step noise (the spread of its residuals around a centred moving
// average) sets how far the run's moving average may lie from the baseline's. Series that stay
// positive (losses, gradient norms) are judged in log space, where their noise is relative.

/// The band's settings: `<metric>_band_window`, `_band_sigmas`, `_band_confirm` in a gate's
/// [params].
struct BandRule {
  int window = 5;      ///< steps of the centred moving average (odd; at least 3)
  double sigmas = 5;   ///< half-width of the band in noise sigmas of a smoothed difference
  int confirm = 3;     ///< consecutive smoothed points outside the band that make a divergence
};

/// One value of a step series.
struct SeriesValue {
  std::int64_t step = 0;
  double value = 0;
};

/// The step-to-step noise of a series: the robust spread (1.4826 × median |residual|) of its
/// values around their centred moving average.
struct SeriesNoise {
  bool log_scale = false;  ///< every value is positive: residuals of log values (relative noise)
  double sigma = 0;        ///< in log units when log_scale, else in the series' units
  std::size_t residuals = 0;  ///< values measured; fewer than window + 1 leaves sigma 0
};

SeriesNoise series_noise(std::span<const double> values, int window);

/// The band at one baseline step whose window the run has completed.
struct BandPoint {
  std::int64_t step = 0;
  double baseline = 0;  ///< the baseline's moving average (geometric in log scale)
  double observed = 0;  ///< the run's (NaN when a value in its window is not finite)
  double low = 0;       ///< the smoothed values the band allows
  double high = 0;
  bool outside = false;
};

/// The run's moving average against the baseline's, at every baseline step whose window the run
/// has logged. A divergence needs `confirm` consecutive points outside the band; each point
/// reads only the steps of its window, so once confirmed no later step can undo it.
struct BandComparison {
  SeriesNoise noise;
  std::vector<BandPoint> judged;
  std::int64_t unjudged = 0;  ///< baseline steps whose window the run has not logged (yet)
  std::optional<std::size_t> first_divergent;  ///< index in `judged`: where the confirmed run starts
  std::optional<std::int64_t> confirmed_at;    ///< the last step the confirmation read
};

/// `reference` in step order. `floor_rel` is the narrowest band, as a relative difference (the
/// metric's rel_tol), so a noiseless baseline does not make the band exact.
BandComparison compare_band(std::span<const SeriesValue> reference,
                            std::span<const SeriesValue> observed, const BandRule& rule,
                            double floor_rel);

/// The values one step may take against `reference` when judged alone: within `sigmas` noise
/// sigmas of a difference of two single steps (never narrower than `floor_rel`).
std::pair<double, double> single_step_band(double reference, const SeriesNoise& noise,
                                           double sigmas, double floor_rel);

}  // namespace bigmac::baseline
