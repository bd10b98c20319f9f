#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bigmac::report {

/// One line of a chart: (x, y) points in x order. Non-finite y values break the line and are
/// marked with a red cross at the top edge, so a NaN step is visible rather than dropped.
struct ChartSeries {
  std::string label;
  std::string css_class;  ///< "run", "baseline", "tolerance": colours and dashes from the page CSS
  std::vector<std::pair<double, double>> points;
};

/// A shaded range, e.g. the values a tolerance allows around the baseline: (x, low, high) in
/// x order. It is clipped to the plot, never widens the axis.
struct ChartBand {
  std::string label;
  std::string css_class;
  std::vector<std::array<double, 3>> ranges;
};

/// A vertical line at one x with a label beside it (the first divergent step).
struct ChartMarker {
  double x = 0;
  std::string label;
};

struct ChartOptions {
  int width = 360;
  int height = 220;
  bool integer_x = true;  ///< x ticks at whole numbers (global steps)
  /// y on a log scale (relative differences); values <= 0 sit on the bottom edge.
  bool log_y = false;
  std::optional<ChartBand> band;
  std::optional<ChartMarker> marker;
};

/// An inline <svg class="plot"> line chart: axes with a few round tick values and grid lines,
/// one <polyline> per unbroken stretch of each series, a legend, and hover columns whose
/// <title> gives every series' value at that x. Labels are XML-escaped. An empty chart says
/// "no data" instead of drawing axes over nothing.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::vector<ChartSeries>& series, const ChartOptions& options = {});

}  // namespace bigmac::report
