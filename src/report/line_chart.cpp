#include "report/line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "report/axis_ticks.h"
#include "report/markup_text.h"

namespace bigmac::report {
namespace {

using Point = std::pair<double, double>;

struct Frame {
  double x0, x1, y0, y1;            // axis range
  double left, right, top, bottom;  // pixel box
  bool log_y = false;
  double px(double x) const {
    return left + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (right - left);
  }
  double py(double y) const {
    double t = 0.5;
    if (log_y) {
      const double a = std::log10(y0), b = std::log10(y1);
      t = y > 0 ? (std::log10(y) - a) / (b - a) : 0;
    } else if (y1 > y0) {
      t = (y - y0) / (y1 - y0);
    }
    return bottom - std::clamp(t, 0.0, 1.0) * (bottom - top);
  }
};

/// At most two points per pixel column (its lowest and highest, in x order) and every
/// non-finite one: a 100 000-step run draws the same picture as a 720-point polyline.
std::vector<Point> thinned(const std::vector<Point>& points, const Frame& f) {
  const auto columns = static_cast<std::size_t>(f.right - f.left) + 1;
  if (points.size() <= 2 * columns) return points;
  std::vector<Point> out;
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

/// Every k-th element so that at most `limit` remain (the last one always kept).
template <class T>
std::vector<T> sampled(const std::vector<T>& items, std::size_t limit) {
  if (items.size() <= limit || limit == 0) return items;
  const std::size_t k = (items.size() + limit - 1) / limit;
  std::vector<T> out;
  for (std::size_t i = 0; i < items.size(); i += k) out.push_back(items[i]);
  if (out.back() != items.back()) out.push_back(items.back());
  return out;
}

/// The data range of every series (finite y only; log axes only y > 0). False when empty.
bool data_range(const std::vector<ChartSeries>& series, bool log_y, Frame& f) {
  const double inf = std::numeric_limits<double>::infinity();
  f.x0 = f.y0 = inf;
  f.x1 = f.y1 = -inf;
  bool any = false;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      f.x0 = std::min(f.x0, x);
      f.x1 = std::max(f.x1, x);
      if (!std::isfinite(y) || (log_y && y <= 0)) continue;
      f.y0 = std::min(f.y0, y);
      f.y1 = std::max(f.y1, y);
      any = true;
    }
  }
  return any;
}

std::string axes(const Frame& f, const AxisTicks& xt, const AxisTicks& yt,
                 const std::string& x_label) {
  std::string out;
  for (double y : yt.values) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>"
        "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        f.left, f.py(y), f.right, f.left - 4, f.py(y) + 4, escape_xml(yt.label(y)));
  }
  for (double x : xt.values) {
    out += fmt::format(
        "<line class=\"tickmark\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        f.px(x), f.bottom, f.bottom + 4, f.bottom + 15, escape_xml(xt.label(x)));
  }
  out += fmt::format(
      "<path class=\"axis\" d=\"M{:.1f} {:.1f} V{:.1f} H{:.1f}\"/>\n"
      "<text class=\"axislabel\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
      f.left, f.top, f.bottom, f.right, (f.left + f.right) / 2, f.bottom + 29, escape_xml(x_label));
  return out;
}

std::string band_polygon(const ChartBand& band, const Frame& f) {
  const auto ranges = sampled(band.ranges, static_cast<std::size_t>(f.right - f.left));
  std::string upper, lower;
  for (const auto& [x, lo, hi] : ranges) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
    upper += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(hi));
  }
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    const auto& [x, lo, hi] = *it;
    if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
    lower += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(lo));
  }
  if (upper.empty()) return {};
  lower.pop_back();
  return fmt::format("<polygon class=\"{}\" points=\"{}{}\"/>\n", escape_xml(band.css_class), upper,
                     lower);
}

std::string series_lines(const ChartSeries& s, const Frame& f) {
  std::string out, points;
  auto flush = [&] {
    if (!points.empty()) {
      out +=
          fmt::format("<polyline class=\"{}\" points=\"{}\"/>\n", escape_xml(s.css_class), points);
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
  return out;
}

/// The value of `points` (sorted by x) at exactly `x`, if it has one.
const Point* point_at(const std::vector<Point>& points, double x) {
  auto it = std::lower_bound(points.begin(), points.end(), x,
                             [](const Point& p, double v) { return p.first < v; });
  return it != points.end() && it->first == x ? &*it : nullptr;
}

/// A tooltip's lines as one line of markup: each line break a character reference, which the
/// browser reads as the same break, so a report is one line per drawn element.
std::string tooltip_text(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find('\n', start);
    out += escape_xml(text.substr(start, end - start));
    if (end == std::string_view::npos) return out;
    out += "&#10;";
    start = end + 1;
  }
}

/// Transparent columns over the plot, one per x (fewer on long runs), each with a <title>
/// that browsers show on hover: the x and every series' value there.
std::string hover_columns(const std::vector<ChartSeries>& series, const ChartOptions& options,
                          const Frame& f, const std::string& x_label) {
  std::vector<std::vector<Point>> sorted;
  std::vector<double> xs;
  for (const auto& s : series) {
    sorted.push_back(s.points);
    std::stable_sort(sorted.back().begin(), sorted.back().end(),
                     [](const Point& a, const Point& b) { return a.first < b.first; });
    for (const auto& p : s.points) xs.push_back(p.first);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  xs = sampled(xs, static_cast<std::size_t>((f.right - f.left) / 3));
  std::string out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    const double from = i == 0 ? f.left : (f.px(xs[i - 1]) + f.px(x)) / 2;
    const double to = i + 1 == xs.size() ? f.right : (f.px(x) + f.px(xs[i + 1])) / 2;
    std::string title = fmt::format("{} {}", x_label, format_value(x));
    for (std::size_t k = 0; k < series.size(); ++k) {
      if (const Point* p = point_at(sorted[k], x)) {
        title += fmt::format("\n{}: {}", series[k].label, format_value(p->second));
      }
    }
    if (options.band) {
      const auto& r = options.band->ranges;
      auto it = std::find_if(r.begin(), r.end(), [&](const auto& b) { return b[0] == x; });
      if (it != r.end()) {
        title += fmt::format("\n{}: {} to {}", options.band->label, format_value((*it)[1]),
                             format_value((*it)[2]));
      }
    }
    out += fmt::format(
        "<rect class=\"hover\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
        "<title>{}</title></rect>\n",
        from, f.top, std::max(1.0, to - from), f.bottom - f.top, tooltip_text(title));
  }
  return out;
}

std::string legend(const std::vector<ChartSeries>& series, const ChartOptions& options, double x) {
  std::string out;
  for (const auto& s : series) {
    out += fmt::format(
        "<line class=\"{0}\" x1=\"{1:.1f}\" y1=\"25\" x2=\"{2:.1f}\" y2=\"25\"/>"
        "<text class=\"legend\" x=\"{3:.1f}\" y=\"29\">{4}</text>\n",
        escape_xml(s.css_class), x, x + 16, x + 20, escape_xml(s.label));
    x += 28 + 7.0 * static_cast<double>(s.label.size());
  }
  if (options.band) {
    out += fmt::format(
        "<rect class=\"{}\" x=\"{:.1f}\" y=\"20\" width=\"16\" height=\"10\"/>"
        "<text class=\"legend\" x=\"{:.1f}\" y=\"29\">{}</text>\n",
        escape_xml(options.band->css_class), x, x + 20, escape_xml(options.band->label));
  }
  return out;
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::vector<ChartSeries>& series, const ChartOptions& options) {
  const int width = options.width, height = options.height;
  Frame f{0, 0, 0, 0, 60, width - 14.0, 40, height - 36.0, options.log_y};
  std::string out = fmt::format(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n"
      "<text class=\"title\" x=\"{}\" y=\"14\">{}</text>\n",
      width, height, width, height, escape_xml(title), f.left, escape_xml(title));
  if (!data_range(series, options.log_y, f)) {
    return out + fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\">no data</text>\n</svg>\n",
                             width / 2 - 24, height / 2);
  }
  // x spans the data exactly (a run ends at the right edge) with round ticks inside it; y is
  // widened to its outer ticks. A log axis starts a decade below the smallest positive value,
  // so exact matches (0, drawn on the floor) stay apart from the smallest difference.
  AxisTicks xt = nice_ticks(f.x0, f.x1, std::max(2, width / 70), options.integer_x);
  if (f.x1 > f.x0) {
    std::erase_if(xt.values, [&](double x) { return x < f.x0 - 1e-9 || x > f.x1 + 1e-9; });
  } else {
    f.x0 = xt.lo;
    f.x1 = xt.hi;
  }
  const AxisTicks yt = options.log_y ? log_ticks(f.y0 / 10, f.y1, std::max(2, height / 30))
                                     : nice_ticks(f.y0, f.y1, std::max(2, height / 45));
  f.y0 = yt.lo;
  f.y1 = yt.hi;
  out += axes(f, xt, yt, x_label);
  if (options.band) out += band_polygon(*options.band, f);
  for (const auto& s : series) out += series_lines(s, f);
  if (options.marker) {
    const double x = f.px(options.marker->x);
    const bool right_half = x > (f.left + f.right) / 2;
    out += fmt::format(
        "<line class=\"marker\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"markerlabel\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"{5}\">{6}</text>\n",
        x, f.top, f.bottom, right_half ? x - 4 : x + 4, f.top + 12, right_half ? "end" : "start",
        escape_xml(options.marker->label));
  }
  out += hover_columns(series, options, f, x_label);
  out += legend(series, options, f.left + 8);
  return out + "</svg>\n";
}

}  // namespace bigmac::report
