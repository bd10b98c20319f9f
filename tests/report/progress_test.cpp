// Terminal progress: overprinting on a terminal, plain lines elsewhere (and under --ci), and
// the status line's content, driven by a fake clock.

#include "report/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "report/line_printer.h"
#include "report/markup_text.h"
#include "report/terminal_style.h"
#include "report_fixture.h"

namespace bigmac::report {
namespace {

struct FakeSeconds {
  double now = 100;
  std::function<double()> clock() {
    return [this] { return now; };
  }
};

Progress::GateStart dp_gate() { return {2, 5, "dp", 1, 4, 20}; }

TEST(LinePrinter, SmartOverprintsAndEndsTheLineBeforeLastingText) {
  std::ostringstream out;
  LinePrinter printer(out, /*smart=*/true, 40);
  printer.print("one");
  printer.print("two");
  printer.print_on_new_line("verdict");
  printer.finish();  // nothing pending: no extra newline
  EXPECT_EQ(out.str(), "\rone\x1b[K\rtwo\x1b[K\nverdict\n");
}

TEST(LinePrinter, PlainPrintsEveryLineWithoutControlCodes) {
  std::ostringstream out;
  LinePrinter printer(out, /*smart=*/false, 10);
  printer.print("a status line longer than ten columns");
  printer.print_on_new_line("done\n");
  EXPECT_EQ(out.str(), "a status line longer than ten columns\ndone\n");
}

TEST(LinePrinter, SmartCutsToTheWidthSoTheTerminalNeverWraps) {
  std::ostringstream out;
  LinePrinter printer(out, true, 21);
  printer.print("[2/5] dp  ranks 4/4  step 7/20  loss 2.5");
  EXPECT_EQ(out.str(), "\r[2/5] dp ...loss 2.5\x1b[K");
  EXPECT_EQ(elide_middle("αβγδεζηθικ", 7), "αβ...ικ");
  EXPECT_EQ(elide_middle("short", 7), "short");
}

TEST(LinePrinter, ForStdoutIsPlainUnderCi) {
  EXPECT_FALSE(LinePrinter::for_stdout(/*ci=*/true).smart());
}

TEST(TerminalProgress, StatusLineShowsGateRanksStepLossBesideBaselineAndElapsed) {
  std::ostringstream out;
  LinePrinter printer(out, true, 200);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.gate_started(dp_gate());
  clock.now += 3;
  progress.ranks_up(4);
  clock.now += 9.4;
  progress.step(6, 2.3412, 2.341);
  const std::string text = out.str();
  const std::string last = text.substr(text.rfind('\r') + 1);
  EXPECT_EQ(last, "[2/5] dp  ranks 4/4  step 7/20  loss 2.3412 (baseline 2.341)  12.4 s\x1b[K");
  EXPECT_NE(text.find("[2/5] dp  ranks 0/4  0.0 s"), std::string::npos) << text;
}

gates::CheckResult check(std::string name, bool passed, std::string message) {
  gates::CheckResult r;
  r.name = std::move(name);
  r.passed = passed;
  r.message = std::move(message);
  return r;
}

gates::GateVerdict passed_dp(std::size_t checks, std::size_t unobservable) {
  gates::GateVerdict v;
  v.gate_id = "dp";
  v.passed = true;
  for (std::size_t i = 0; i < checks; ++i)
    v.results.push_back(check("check" + std::to_string(i), true, ""));
  for (std::size_t i = 0; i < unobservable; ++i) v.unobservable.push_back({});
  return v;
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// Drives one 20-step gate of 4 ranks, a second apart, as a run does.
void run_dp_gate(TerminalProgress& progress, FakeSeconds& clock) {
  progress.run_started("20251129-104000", 5);
  progress.gate_started(dp_gate());
  for (int up = 1; up <= 4; ++up) progress.ranks_up(up);
  for (int s = 0; s < 20; ++s) {
    clock.now += 1;
    progress.tick(std::nullopt);
    progress.step(s, 4.0 - 0.1 * s, std::nullopt);
  }
  progress.detail("dp: pending -> running");
  progress.gate_finished(passed_dp(9, 2), "");
}

TEST(TerminalProgress, PlainModePrintsOneLinePerGateByDefault) {
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  run_dp_gate(progress, clock);
  const std::string text = out.str();
  EXPECT_EQ(text, "[2/5] dp      passed   20.0 s  9 checks, 2 unobservable\n");
}

// A passed check's warning (replicas keeping BatchNorm statistics of their own) is printed
// under the gate's line at the default verbosity, and counted on it.
TEST(TerminalProgress, AWarningIsPrintedUnderItsGatesLine) {
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.gate_started(dp_gate());
  gates::GateVerdict v = passed_dp(3, 0);
  v.results[1].warning = "buffers apart at step 1";
  clock.now += 2;
  progress.gate_finished(v, "");
  EXPECT_EQ(out.str(),
            "[2/5] dp      passed    2.0 s  3 checks, 1 warning\n"
            "  warning: check1: buffers apart at step 1\n");
}

TEST(TerminalProgress, VerbosePlainModeAddsMilestonesAndDetailsNotEveryStep) {
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock(), {Verbosity::kVerbose, false, ""});
  run_dp_gate(progress, clock);
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  // run line, gate start, all ranks up (once), steps 1,2,4,...,20 (11), a detail, the gate line
  EXPECT_EQ(count_lines(text), 1u + 1u + 1u + 11u + 1u + 1u) << text;
  EXPECT_NE(text.find("ranks 4/4  step 20/20  loss 2.1"), std::string::npos) << text;
  EXPECT_NE(text.find("dp: pending -> running\n"), std::string::npos) << text;
}

TEST(TerminalProgress, QuietPrintsNothingBeforeTheVerdict) {
  std::ostringstream out;
  LinePrinter printer(out, true);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock(), {Verbosity::kQuiet, false, ""});
  run_dp_gate(progress, clock);
  progress.message("a port moved");
  EXPECT_EQ(out.str(), "");
}

TEST(TerminalProgress, TheLiveLineTicksWithoutLinesAndShowsTheSilenceAgainstItsLimit) {
  std::ostringstream out;
  LinePrinter printer(out, true, 200);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.gate_started(dp_gate());
  progress.ranks_up(4);
  clock.now += 3.2;
  progress.tick(Progress::Silence{1, 3.1, 5.0});
  std::string text = out.str();
  EXPECT_EQ(text.substr(text.rfind('\r') + 1),
            "[2/5] dp  ranks 4/4  3.2 s  silent 3.1 s / 5.0 s (rank 1)\x1b[K");
  // Under a second of silence is not worth a word; the clock still runs.
  clock.now += 0.5;
  progress.tick(Progress::Silence{0, 0.4, 5.0});
  text = out.str();
  EXPECT_EQ(text.substr(text.rfind('\r') + 1), "[2/5] dp  ranks 4/4  3.7 s\x1b[K");
}

TEST(TerminalProgress, APlainLogShowsALongGateIsAliveOnceAMinute) {
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.gate_started(dp_gate());
  for (int i = 0; i < 10 * 25; ++i) {  // 125 s in ticks of 0.5 s
    clock.now += 0.5;
    progress.tick(Progress::Silence{2, 30, 60});
  }
  const std::string text = out.str();
  EXPECT_EQ(count_lines(text), 2u) << text;
  EXPECT_NE(text.find("[2/5] dp  ranks 0/4  1 m 00 s  silent 30.0 s / 60.0 s (rank 2)\n"),
            std::string::npos)
      << text;
}

TEST(TerminalProgress, ColourPaintsTheStatusWordsOnlyWhenAsked) {
  const gates::GateVerdict v = passed_dp(3, 1);
  EXPECT_EQ(format_gate_line(2, 5, v, 4.7, "", false),
            "[2/5] dp      passed    4.7 s  3 checks, 1 unobservable");
  EXPECT_EQ(
      format_gate_line(2, 5, v, 4.7, "", true),
      "[2/5] dp      \x1b[32mpassed\x1b[0m    4.7 s  3 checks, \x1b[33m1 unobservable\x1b[0m");
  EXPECT_EQ(paint_check_lines("  ok   finite_loss  fine\n  FAIL lr  bad\nplain\n", true),
            "  \x1b[32mok\x1b[0m   finite_loss  fine\n  \x1b[1;31mFAIL\x1b[0m lr  bad\nplain\n");
  EXPECT_EQ(paint_check_lines("  ok   x\n", false), "  ok   x\n");
}

TEST(TerminalStyle, NoColorAndDumbTerminalsAndPipesGetPlainText) {
  EXPECT_TRUE(use_color(ColorChoice::kAuto, true, nullptr, "xterm-256color"));
  EXPECT_FALSE(use_color(ColorChoice::kAuto, true, "1", "xterm"));
  EXPECT_TRUE(use_color(ColorChoice::kAuto, true, "", "xterm")) << "an empty NO_COLOR is unset";
  EXPECT_FALSE(use_color(ColorChoice::kAuto, true, nullptr, "dumb"));
  EXPECT_FALSE(use_color(ColorChoice::kAuto, false, nullptr, "xterm")) << "a pipe";
  EXPECT_TRUE(use_color(ColorChoice::kAlways, false, "1", "dumb"));
  EXPECT_FALSE(use_color(ColorChoice::kNever, true, nullptr, "xterm"));
  EXPECT_EQ(parse_color_choice("always"), ColorChoice::kAlways);
  EXPECT_EQ(parse_color_choice("yes"), std::nullopt);
}

TEST(TerminalProgress, AFailedGateLineGivesItsFirstFailedCheckAndMessage) {
  gates::GateVerdict v;
  v.gate_id = "dp";
  v.results.push_back(check("finite_loss", true, "fine"));
  v.results.push_back(check("lr_vs_baseline", false, "lr diverges at step 0\nmore"));
  EXPECT_EQ(format_gate_line(2, 5, v, 1.9, "", false),
            "[2/5] dp      FAILED    1.9 s  lr_vs_baseline: lr diverges at step 0");
}

TEST(TerminalProgress, FinalBlockPutsTheFailureAndItsDiagnosisFirst) {
  auto input =
      load_report_input(testing::fixtures() / "failed", testing::fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  std::ostringstream out;
  LinePrinter printer(out, true);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock(), {Verbosity::kVerbose, false, ""});
  progress.gate_started({3, 5, "pp2", 1, 2, 8});
  progress.run_finished(*input, "reports/failed/report.html");
  const std::string text = out.str();
  EXPECT_NE(text.find("\x1b[K\n"), std::string::npos) << "status line not ended before the table";
  EXPECT_NE(text.find(" 3  pp2     FAILED"), std::string::npos) << text;
  EXPECT_NE(text.find("Symptom:    loss matches the baseline at first, then differs from step 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Fix:        compare the logged lr"), std::string::npos);
  EXPECT_NE(text.find("Go back to: dp"), std::string::npos);
  EXPECT_LT(text.find("Symptom:"), text.find(" 3  pp2     FAILED")) << "failure first";
  EXPECT_NE(text.find("\nreport: reports/failed/report.html\n"), std::string::npos) << text;
}

TEST(TerminalProgress, ByDefaultAFailurePrintsItsCardOnceAndThePasteableResume) {
  auto input =
      load_report_input(testing::fixtures() / "failed", testing::fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(
      printer, clock.clock(),
      {Verbosity::kNormal, false, "build/bin/bigmac-bringup resume reports/x"});
  progress.run_finished(*input, "reports/x/report.html");
  const std::string text = out.str();
  EXPECT_EQ(text.find("Symptom:"), text.rfind("Symptom:")) << text;
  EXPECT_EQ(text.find(" 3  pp2     FAILED"), std::string::npos) << "the table is -v's";
  EXPECT_NE(text.find("Resume:     build/bin/bigmac-bringup resume reports/x   ("),
            std::string::npos)
      << text;
  const std::string last = "\nreport: reports/x/report.html\n";
  EXPECT_EQ(text.substr(text.size() - last.size()), last) << text;
}

TEST(TerminalProgress, APassedRunEndsInOneLineWithItsReport) {
  auto input =
      load_report_input(testing::fixtures() / "passed", testing::fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.run_finished(*input, "reports/p/report.html");
  const std::string text = out.str();
  EXPECT_EQ(count_lines(text), 1u) << text;
  const std::string said =
      input->state.message.empty()
          ? std::to_string(input->count(run::GateStatus::kPassed)) + " gates passed"
          : input->state.message;
  EXPECT_EQ(text.rfind(said + "; report: reports/p/report.html", 0), 0u) << text;
}

TEST(MarkupText, EscapesAndFormats) {
  EXPECT_EQ(escape_xml("a<b>&\"c\"'\x02\t"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;?\t");
  EXPECT_EQ(escape_markdown_cell("a|b\nc<"), "a\\|b c&lt;");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(escape_xml("a\xff b\xc3\x28 \xc3\xa9 \xed\xa0\x80 \xe2\x82"),
            "a" + fffd + " b" + fffd + "( \xc3\xa9 " + fffd + fffd + fffd + " " + fffd + fffd);
  EXPECT_EQ(escape_xml("λ → ✓ 🚀"), "λ → ✓ 🚀");
  EXPECT_EQ(format_value(2.0 / 3.0), "0.666667");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(format_duration(0), "–");
  EXPECT_EQ(format_duration(12.34), "12.3 s");
  EXPECT_EQ(format_duration(125), "2 m 05 s");
  EXPECT_EQ(format_duration(3720), "1 h 02 m");
}

// D18: a run id (or evidence) with backticks, HTML or a line break reached summary.md and
// $GITHUB_STEP_SUMMARY as Markdown and HTML.
TEST(MarkupText, CodeSpansShowAnyTextLiterally) {
  EXPECT_EQ(markdown_code("20261129-114427"), "`20261129-114427`");
  EXPECT_EQ(markdown_code("`<img src=x onerror=alert(1)>`"),
            "`` `<img src=x onerror=alert(1)>` ``");
  EXPECT_EQ(markdown_code("a``b"), "```a``b```");
  EXPECT_EQ(markdown_code("a\n<img>\r\x01"), "`a <img>  `");
  EXPECT_EQ(markdown_code("a|b", /*in_table=*/true), "`a\\|b`");
  EXPECT_EQ(markdown_code(""), "` `");
  EXPECT_EQ(markdown_code("\xff"), "`\xEF\xBF\xBD`");
  EXPECT_EQ(markdown_code_block({"plain", "``` closes?", "x"}),
            "````text\nplain\n``` closes?\nx\n````\n");
  EXPECT_EQ(markdown_code_block({"plain"}), "```text\nplain\n```\n");
}

}  // namespace
}  // namespace bigmac::report
