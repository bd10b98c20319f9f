#include "report/schedule_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "report/markup_text.h"

namespace bigmac::report {

std::string schedule_chart(const std::vector<logs::MicroBatchRecord>& events, int max_steps,
                           int width) {
  std::set<std::int64_t> steps;
  for (const auto& e : events) steps.insert(e.global_step);
  std::set<std::int64_t> shown;
  for (auto s : steps) {
    if (static_cast<int>(shown.size()) >= max_steps) break;
    shown.insert(s);
  }
  std::vector<const logs::MicroBatchRecord*> boxes;
  int stages = 0;
  double t0 = 0, t1 = 0;
  for (const auto& e : events) {
    if (!shown.count(e.global_step)) continue;
    if (boxes.empty() || e.start < t0) t0 = e.start;
    if (boxes.empty() || e.end > t1) t1 = e.end;
    stages = std::max(stages, e.stage + 1);
    boxes.push_back(&e);
  }
  const double left = 70, right = width - 10.0, lane = 28, top = 8;
  const int height = static_cast<int>(top + lane * stages + 30);
  std::string out = fmt::format(
      "<svg class=\"schedule\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"pipeline schedule\">\n",
      width, height);
  if (boxes.empty()) return out + "<text x=\"10\" y=\"20\">no micro-batch events</text>\n</svg>\n";
  const double span = t1 > t0 ? t1 - t0 : 1;
  auto px = [&](double t) { return left + (t - t0) / span * (right - left); };
  for (int s = 0; s < stages; ++s) {
    out += fmt::format("<text class=\"lane\" x=\"4\" y=\"{:.1f}\">stage {}</text>\n",
                       top + lane * s + lane / 2 + 4, s);
  }
  for (const auto* e : boxes) {
    const double x = px(e->start);
    const double w = std::max(1.0, px(e->end) - x);
    const double y = top + lane * e->stage + 3;
    const char phase = e->phase == 'B' ? 'B' : 'F';
    out += fmt::format(
        "<rect class=\"mb {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
        "<title>step {} stage {} mb {} {} {:.1f}–{:.1f} ms</title></rect>\n",
        phase, x, y, w, lane - 6, e->global_step, e->stage, e->mb, phase, (e->start - t0) * 1000,
        (e->end - t0) * 1000);
    if (w >= 14) {
      out += fmt::format(
          "<text class=\"mbl\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}{}</text>\n",
          x + w / 2, y + lane / 2 + 1, phase, e->mb);
    }
  }
  out += fmt::format(
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\">0 ms</text>"
      "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\">{} ms (steps {}–{})</text>\n",
      left, height - 8, right, height - 8, escape_xml(format_value(span * 1000)), *shown.begin(),
      *shown.rbegin());
  return out + "</svg>\n";
}

}  // namespace bigmac::report
