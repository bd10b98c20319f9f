// The SVG pieces of report.html: line charts (breaks at non-finite values, thinning of long
// runs, escaping) and the pipeline schedule.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "report/attempt_result.h"
#include "report/line_chart.h"
#include "report/schedule_chart.h"

namespace bigmac::report {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LineChart, NonFiniteValueBreaksTheLineAndIsMarked) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ChartSeries run{"dp", "run", {{0, 4.0}, {1, 3.9}, {2, nan}, {3, 3.7}, {4, 3.6}}};
  const std::string svg = line_chart("dp — loss", "global step", {run});
  EXPECT_EQ(count(svg, "<polyline class=\"run\""), 2u) << svg;
  EXPECT_EQ(count(svg, "class=\"nonfinite\""), 1u);
  EXPECT_NE(svg.find(">4<"), std::string::npos);    // y max tick
  EXPECT_NE(svg.find(">3.6<"), std::string::npos);  // y min tick
}

TEST(LineChart, EscapesLabelsAndSaysNoDataWhenEmpty) {
  const std::string svg = line_chart("<script>x</script>", "s", {{"a&b", "run", {}}});
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
}

TEST(LineChart, LongRunsAreThinnedToTwoPointsPerColumnKeepingExtremes) {
  ChartSeries run{"target", "run", {}};
  for (int i = 0; i < 100000; ++i)
    run.points.emplace_back(i, i == 54321 ? 100.0 : std::sin(i * 0.01));
  const std::string svg = line_chart("loss", "global step", {run}, 360, 220);
  const auto points = count(svg, ",");
  EXPECT_LE(points, 2u * 300u);
  EXPECT_GT(points, 100u);
  EXPECT_NE(svg.find(">100<"), std::string::npos);
  // The spike survives thinning: some point sits at the top of the plot area (y = 40).
  EXPECT_NE(svg.find(",40.0"), std::string::npos) << svg.substr(0, 600);
}

TEST(ScheduleChart, OneLanePerStageOneBoxPerEventOfTheFirstSteps) {
  std::vector<logs::MicroBatchRecord> events;
  for (int step = 0; step < 3; ++step) {
    for (int stage = 0; stage < 2; ++stage) {
      for (int mb = 0; mb < 4; ++mb) {
        const double t = step * 1.0 + mb * 0.1 + stage * 0.05;
        events.push_back({{stage, 0, t}, step, stage, mb, 'F', t, t + 0.04});
        events.push_back({{stage, 0, t}, step, stage, mb, 'B', t + 0.5, t + 0.56});
      }
    }
  }
  const std::string svg = schedule_chart(events, /*max_steps=*/2);
  EXPECT_EQ(count(svg, "<rect class=\"mb F\""), 2u * 2u * 4u);
  EXPECT_EQ(count(svg, "<rect class=\"mb B\""), 2u * 2u * 4u);
  EXPECT_NE(svg.find(">stage 1<"), std::string::npos);
  EXPECT_EQ(svg.find(">stage 2<"), std::string::npos);
  EXPECT_NE(svg.find("steps 0–1"), std::string::npos);
  EXPECT_NE(schedule_chart({}).find("no micro-batch events"), std::string::npos);
}

TEST(AttemptResult, FromALaunchResult) {
  launch::RunResult result;
  result.status = launch::RunStatus::kFailed;
  result.duration = launch::duration_of_seconds(3.5);
  launch::RankOutcome ok;
  ok.rank = 0;
  ok.exit = proc::ExitStatus{0, 0};
  ok.duration = launch::duration_of_seconds(3.4);
  launch::RankOutcome killed;
  killed.rank = 1;
  killed.exit = proc::ExitStatus{0, 9};
  killed.first_error_line = "RuntimeError: boom";
  result.ranks = {ok, killed};
  const AttemptResult r = attempt_result_of(result, 1764412800.0);
  EXPECT_EQ(r.status, "failed");
  EXPECT_DOUBLE_EQ(r.duration_s, 3.5);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].exit_code, 0);
  EXPECT_NEAR(r.ranks[0].duration_s, 3.4, 1e-9);
  EXPECT_FALSE(r.ranks[1].exit_code);
  EXPECT_EQ(r.ranks[1].signal, "SIGKILL");
  EXPECT_EQ(r.ranks[1].first_error_line, "RuntimeError: boom");
}

}  // namespace
}  // namespace bigmac::report
