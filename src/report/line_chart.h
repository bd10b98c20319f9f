#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bigmac::report {

/// One line of a chart: (x, y) points in x order. Non-finite y values break the line and are
/// marked with a red cross at the top edge, so a NaN step is visible rather than dropped.
struct ChartSeries {
  std::string label;
  std::string css_class;  ///< "run" or "baseline": colours and dashes come from the page CSS
  std::vector<std::pair<double, double>> points;
};

/// An inline <svg class="plot"> line chart with axes, min/max tick labels and a legend; one
/// <polyline> per unbroken stretch of each series. Labels are XML-escaped. An empty chart says
/// "no data" instead of drawing axes over nothing.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::vector<ChartSeries>& series, int width = 360, int height = 220);

}  // namespace bigmac::report
