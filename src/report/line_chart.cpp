#include "report/line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/markup_text.h"

namespace bigmac::report {
namespace {

struct Frame {
  double x0, x1, y0, y1;            // data range
  double left, right, top, bottom;  // pixel box
  double px(double x) const {
    return left + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (right - left);
  }
  double py(double y) const {
    return bottom - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (bottom - top);
  }
};

/// At most two points per pixel column (its lowest and highest, in x order) and every
/// non-finite one: a 100 000-step run draws the same picture as a 720-point polyline.
std::vector<std::pair<double, double>> thinned(const std::vector<std::pair<double, double>>& points,
                                               const Frame& f) {
  const auto columns = static_cast<std::size_t>(f.right - f.left) + 1;
  if (points.size() <= 2 * columns) return points;
  std::vector<std::pair<double, double>> out;
  long column = -1;
  std::size_t low = 0, high = 0;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    out.push_back(points[std::min(low, high)]);
    if (low != high) out.push_back(points[std::max(low, high)]);
    open = false;
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& [x, y] = points[i];
    if (!std::isfinite(y)) {
      close();
      out.push_back(points[i]);
      continue;
    }
    const long c = std::lround(f.px(x));
    if (!open || c != column) {
      close();
      column = c;
      low = high = i;
      open = true;
    } else if (y < points[low].second) {
      low = i;
    } else if (y > points[high].second) {
      high = i;
    }
  }
  close();
  return out;
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::vector<ChartSeries>& series, int width, int height) {
  const double inf = std::numeric_limits<double>::infinity();
  Frame f{inf, -inf, inf, -inf, 56, width - 12.0, 40, height - 34.0};
  bool any = false;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      f.x0 = std::min(f.x0, x);
      f.x1 = std::max(f.x1, x);
      if (!std::isfinite(y)) continue;
      f.y0 = std::min(f.y0, y);
      f.y1 = std::max(f.y1, y);
      any = true;
    }
  }
  std::string out = fmt::format(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n"
      "<text class=\"title\" x=\"{}\" y=\"14\">{}</text>\n",
      width, height, width, height, escape_xml(title), f.left, escape_xml(title));
  if (!any) {
    return out + fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\">no data</text>\n</svg>\n",
                             width / 2 - 24, height / 2);
  }
  if (f.y1 == f.y0) {  // a flat line still needs a visible range
    const double pad = f.y0 == 0 ? 1 : std::fabs(f.y0) * 0.05;
    f.y0 -= pad;
    f.y1 += pad;
  }
  out += fmt::format(
      "<path class=\"axis\" d=\"M{:.1f} {:.1f} V{:.1f} H{:.1f}\"/>\n"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
      f.left, f.top, f.bottom, f.right, f.left - 4, f.top + 4, escape_xml(format_value(f.y1)),
      f.left - 4, f.bottom, escape_xml(format_value(f.y0)), f.left, f.bottom + 14,
      escape_xml(format_value(f.x0)), f.right, f.bottom + 14, escape_xml(format_value(f.x1)),
      (f.left + f.right) / 2, f.bottom + 28, escape_xml(x_label));
  double legend_x = f.left + 8;
  for (const auto& s : series) {
    std::string points;
    auto flush = [&] {
      if (!points.empty()) {
        out += fmt::format("<polyline class=\"{}\" points=\"{}\"/>\n", escape_xml(s.css_class),
                           points);
      }
      points.clear();
    };
    for (const auto& [x, y] : thinned(s.points, f)) {
      if (!std::isfinite(y)) {
        flush();
        out += fmt::format(
            "<text class=\"nonfinite\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">✕</text>\n",
            f.px(x), f.top + 4);
        continue;
      }
      points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", f.px(x), f.py(y));
    }
    flush();
    out += fmt::format(
        "<line class=\"{0}\" x1=\"{1:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"legend\" x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
        escape_xml(s.css_class), legend_x, 25.0, legend_x + 16, legend_x + 20, 29.0,
        escape_xml(s.label));
    legend_x += 28 + 7.0 * static_cast<double>(s.label.size());
  }
  return out + "</svg>\n";
}

}  // namespace bigmac::report
