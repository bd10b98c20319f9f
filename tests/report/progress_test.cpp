// Terminal progress: overprinting on a terminal, plain lines elsewhere (and under --ci), and
// the status line's content, driven by a fake clock.

#include "report/progress.h"

#include <gtest/gtest.h>

#include <sstream>

#include "report/line_printer.h"
#include "report/markup_text.h"
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

TEST(TerminalProgress, PlainModePrintsMilestonesNotEveryStep) {
  std::ostringstream out;
  LinePrinter printer(out, false);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.run_started("20251129-104000", 5);
  progress.gate_started(dp_gate());
  for (int up = 1; up <= 4; ++up) progress.ranks_up(up);
  for (int s = 0; s < 20; ++s) {
    clock.now += 1;
    progress.step(s, 4.0 - 0.1 * s, std::nullopt);
  }
  progress.gate_finished("dp", gates::GateStatus::kPassed, "dp passed (9 checks)");
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  // run line, gate start, all ranks up (once), steps 1,2,4,...,20 (11), final status, verdict
  EXPECT_EQ(lines, 1u + 1u + 1u + 11u + 1u + 1u) << text;
  EXPECT_NE(text.find("ranks 4/4  step 20/20  loss 2.1"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/5] dp passed in 20.0 s: dp passed (9 checks)\n"), std::string::npos)
      << text;
}

TEST(TerminalProgress, FinalBlockPutsTheFailureAndItsDiagnosisFirst) {
  auto input =
      load_report_input(testing::fixtures() / "failed", testing::fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  std::ostringstream out;
  LinePrinter printer(out, true);
  FakeSeconds clock;
  TerminalProgress progress(printer, clock.clock());
  progress.gate_started({3, 5, "pp2", 1, 2, 8});
  progress.run_finished(*input);
  const std::string text = out.str();
  EXPECT_NE(text.find("\x1b[K\n"), std::string::npos) << "status line not ended before the table";
  EXPECT_NE(text.find(" 3  pp2     FAILED"), std::string::npos) << text;
  EXPECT_NE(text.find("Symptom:    loss matches the baseline at first, then differs from step 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Fix:        compare the logged lr"), std::string::npos);
  EXPECT_NE(text.find("Go back to: dp"), std::string::npos);
  EXPECT_LT(text.find("Symptom:"), text.find(" 3  pp2     FAILED")) << "failure first";
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
