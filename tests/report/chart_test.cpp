// The SVG pieces of report.html: axis ticks, line charts (breaks at non-finite values, thinning
// of long runs, escaping, hover values, tolerance band, marker, log axis) and the pipeline
// schedule.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/json_file.h"
#include "report/attempt_result.h"
#include "report/axis_ticks.h"
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
  EXPECT_NE(svg.find(">4.0<"), std::string::npos) << svg;  // round ticks: 3.6 3.8 4.0
  EXPECT_NE(svg.find(">3.8<"), std::string::npos);
  EXPECT_NE(svg.find(">3.6<"), std::string::npos);
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
  const std::string svg = line_chart("loss", "global step", {run});
  const auto points = count(svg, ",");
  EXPECT_LE(points, 2u * 300u);
  EXPECT_GT(points, 100u);
  EXPECT_NE(svg.find(">100<"), std::string::npos);
  // The spike survives thinning: some point sits at the top of the plot area (y = 40).
  EXPECT_NE(svg.find(",40.0"), std::string::npos) << svg.substr(0, 600);
}

/// Every tick is a multiple of the step, the step is 1, 2 or 5 × 10^k, and the ticks cover
/// the data with no more than one step to spare at either end.
void expect_round_ticks(const AxisTicks& t, double lo, double hi) {
  ASSERT_GE(t.values.size(), 2u);
  const double exponent = std::floor(std::log10(t.step));
  const double mantissa = t.step / std::pow(10.0, exponent);
  EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 ||
              std::fabs(mantissa - 5) < 1e-9)
      << t.step;
  for (double v : t.values) {
    EXPECT_NEAR(v / t.step, std::round(v / t.step), 1e-6) << v;
  }
  EXPECT_LE(t.lo, lo);
  EXPECT_GE(t.hi, hi);
  EXPECT_GT(t.lo, lo - t.step);
  EXPECT_LT(t.hi, hi + t.step);
  EXPECT_DOUBLE_EQ(t.values.front(), t.lo);
  EXPECT_NEAR(t.values.back(), t.hi, t.step * 1e-9);
}

TEST(AxisTicks, AFewRoundValuesCoveringTheData) {
  const AxisTicks steps = nice_ticks(0, 19, 5, /*integers=*/true);
  EXPECT_EQ(steps.values, (std::vector<double>{0, 5, 10, 15, 20}));
  EXPECT_EQ(steps.label(15), "15");

  const AxisTicks loss = nice_ticks(3.5765, 4.8266, 5);
  expect_round_ticks(loss, 3.5765, 4.8266);
  EXPECT_EQ(loss.values.size(), 4u);  // 3.5 4.0 4.5 5.0
  EXPECT_EQ(loss.label(loss.values[1]), "4.0");

  // Few steps: never a fractional step number.
  EXPECT_EQ(nice_ticks(0, 3, 10, true).values, (std::vector<double>{0, 1, 2, 3}));
  // One value gets room on both sides.
  const AxisTicks one = nice_ticks(7, 7, 5, true);
  EXPECT_LE(one.lo, 6);
  EXPECT_GE(one.hi, 8);

  for (auto [lo, hi] : {std::pair{0.0006, 0.0024}, std::pair{-3.2, 11.7}, std::pair{1e5, 3.4e5},
                        std::pair{0.999999, 1.000003}}) {
    expect_round_ticks(nice_ticks(lo, hi, 5), lo, hi);
  }
  const AxisTicks lr = nice_ticks(0.0006, 0.0024, 5);
  EXPECT_EQ(lr.label(lr.values[1]), "0.0010") << lr.step;
  // A range too narrow for fixed decimals is labelled in scientific notation, ticks distinct.
  const AxisTicks narrow = nice_ticks(0.999999, 1.000003, 5);
  EXPECT_NE(narrow.label(narrow.values[0]), narrow.label(narrow.values[1]));
}

TEST(AxisTicks, LogAxisAtPowersOfTen) {
  const AxisTicks t = log_ticks(1.3e-7, 0.3, 5);
  EXPECT_TRUE(t.log);
  EXPECT_EQ(t.values.size(), 5u);  // 1e-7 1e-5 0.001 0.1 10: every second decade
  EXPECT_DOUBLE_EQ(t.lo, 1e-7);
  EXPECT_EQ(t.label(t.values[0]), "1e-7");
  EXPECT_EQ(t.label(t.values[2]), "0.001");
  EXPECT_EQ(t.label(t.values[3]), "0.1");
  const AxisTicks two = log_ticks(2e-3, 5e-2, 5);
  EXPECT_EQ(two.values, (std::vector<double>{1e-3, 1e-2, 1e-1}));
}

TEST(LineChart, HoverColumnsGiveEverySeriesValueAtThatStep) {
  ChartSeries run{"dp", "run", {{0, 4.0}, {1, 3.9}, {2, 3.85}}};
  ChartSeries base{"baseline", "baseline", {{0, 4.0}, {1, 3.8}, {2, 3.7}, {3, 3.6}}};
  const std::string svg = line_chart("dp — loss", "global step", {run, base});
  EXPECT_EQ(count(svg, "<rect class=\"hover\""), 4u) << svg;
  EXPECT_NE(svg.find("<title>global step 1&#10;dp: 3.9&#10;baseline: 3.8</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>global step 3&#10;baseline: 3.6</title>"), std::string::npos);
  // Long runs: a column every few pixels at most, not one per step.
  ChartSeries longer{"target", "run", {}};
  for (int i = 0; i < 5000; ++i) longer.points.emplace_back(i, 1.0 / (1 + i));
  EXPECT_LE(count(line_chart("loss", "global step", {longer}), "<rect class=\"hover\""), 120u);
}

TEST(LineChart, ToleranceBandMarkerAndLogAxis) {
  ChartOptions options;
  options.band = ChartBand{"tolerance (relative 0.01)", "band", {}};
  for (int s = 0; s < 4; ++s) options.band->ranges.push_back({double(s), 3.9 - 0.1 * s, 4.1});
  options.marker = ChartMarker{2, "first divergent step 2"};
  const std::string svg =
      line_chart("loss", "global step", {{"dp", "run", {{0, 4}, {1, 4}, {2, 5}, {3, 6}}}}, options);
  EXPECT_EQ(count(svg, "<polygon class=\"band\""), 1u) << svg;
  EXPECT_EQ(count(svg, "<line class=\"marker\""), 1u);
  EXPECT_NE(svg.find(">first divergent step 2<"), std::string::npos);
  EXPECT_NE(svg.find("tolerance (relative 0.01): 3.7 to 4.1"), std::string::npos) << svg;

  ChartOptions log;
  log.log_y = true;
  const std::string diffs = line_chart(
      "rel diff", "global step", {{"rel diff", "diff", {{0, 0.0}, {1, 2e-7}, {2, 0.02}}}}, log);
  EXPECT_NE(diffs.find(">1e-8<"), std::string::npos) << diffs;  // a decade below 2e-7
  EXPECT_NE(diffs.find(">0.01<"), std::string::npos);
  EXPECT_EQ(count(diffs, "<polyline class=\"diff\""), 1u);  // the exact 0 sits on the floor
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

TEST(AttemptResult, WhereAnInterruptedRunWasIsKept) {
  launch::RunResult result;
  result.status = launch::RunStatus::kInterrupted;
  result.interrupted_at = {"rank 0: main thread in all_reduce, called at train.py:61 in main",
                           "rank 1: main thread at data.py:40 in load_batch"};
  const AttemptResult r =
      attempt_result_from_json(to_json(attempt_result_of(result, 1764412800.0)));
  EXPECT_EQ(r.status, "interrupted");
  EXPECT_EQ(r.interrupted_at, result.interrupted_at);
  // A result without places writes none and reads back none.
  result.interrupted_at.clear();
  EXPECT_FALSE(to_json(attempt_result_of(result, 0)).contains("interrupted_at"));
}

TEST(AttemptResult, ALineCutMidCharacterIsWrittenNotLost) {
  // A rank stopped while its progress bar was being written: its last bytes end mid-character.
  launch::RunResult result;
  result.status = launch::RunStatus::kStoppedEarly;
  launch::RankOutcome cut;
  cut.rank = 0;
  cut.exit = proc::ExitStatus{0, 15};
  cut.first_error_line = "Training:  60%|\xe2\x96\x88\xe2\x96\x88\xe2";
  result.ranks = {cut};
  const std::string text = json_text(to_json(attempt_result_of(result, 1764412800.0)), 2);
  auto back = parse_json(text, "result.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_NE(text.find("Training:  60%"), std::string::npos) << text;
}

}  // namespace
}  // namespace bigmac::report
