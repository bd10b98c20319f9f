#include "report/metric_chart.h"

#include <fmt/format.h>

#include <cmath>

#include "report/line_chart.h"

namespace bigmac::report {
namespace {

constexpr int kWidth = 1000;

std::optional<ChartMarker> marker_of(const FailingMetric& m) {
  if (m.divergence) {
    return ChartMarker{static_cast<double>(m.divergence->step),
                       fmt::format("first divergent step {}", m.divergence->step)};
  }
  const MetricStep* last_run = nullptr;
  for (const MetricStep& s : m.steps) {
    if (s.run) last_run = &s;
  }
  if (last_run && last_run != &m.steps.back()) {  // the baseline goes on past the run's end
    return ChartMarker{static_cast<double>(last_run->step),
                       fmt::format("last step logged {}", last_run->step)};
  }
  return std::nullopt;
}

}  // namespace

std::string metric_chart(const FailingMetric& m, const std::string& gate_id) {
  ChartSeries run{gate_id, "run", {}}, base{"baseline", "baseline", {}};
  ChartSeries diff{"rel diff", "diff", {}}, allowed{"allowed", "tolerance", {}};
  ChartBand band{
      m.divergence ? "tolerance (" + m.divergence->tolerance.describe() + ")" : "", "band", {}};
  bool any_positive_diff = false;
  for (const MetricStep& s : m.steps) {
    const auto x = static_cast<double>(s.step);
    if (s.run) run.points.emplace_back(x, *s.run);
    if (s.baseline) {
      base.points.emplace_back(x, *s.baseline);
      if (auto range = m.allowed(*s.baseline); range && range->first != range->second) {
        band.ranges.push_back({x, range->first, range->second});
      }
      if (auto a = m.allowed_rel_diff(*s.baseline)) allowed.points.emplace_back(x, *a);
    }
    if (s.rel_diff) {
      // Non-finite stays NaN so the chart marks it; equal values sit on the axis floor.
      diff.points.emplace_back(x, std::isfinite(*s.rel_diff) ? *s.rel_diff : std::nan(""));
      any_positive_diff = any_positive_diff || (*s.rel_diff > 0 && std::isfinite(*s.rel_diff));
    }
  }
  ChartOptions top;
  top.width = kWidth;
  top.height = 250;
  top.marker = marker_of(m);
  if (!band.ranges.empty()) top.band = band;
  std::vector<ChartSeries> values{run};
  if (!base.points.empty()) values.push_back(base);
  std::string out = line_chart(fmt::format("{} — {} against the baseline", gate_id, m.metric),
                               "global step", values, top);
  if (!any_positive_diff) return out;
  ChartOptions bottom;
  bottom.width = kWidth;
  bottom.height = 190;
  bottom.log_y = true;
  bottom.marker = top.marker;
  std::vector<ChartSeries> diffs{diff};
  if (!allowed.points.empty()) diffs.push_back(allowed);
  return out +
         line_chart(fmt::format("{} — relative difference |run − baseline| / |baseline|", m.metric),
                    "global step", diffs, bottom);
}

}  // namespace bigmac::report
