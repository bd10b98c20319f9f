// Failure first: the verdict card and the failing metric of a failed gate, and their place at
// the top of report.html, summary.md and the terminal's final block.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/failing_metric.h"
#include "report/html_report.h"
#include "report/markdown_summary.h"
#include "report/progress.h"
#include "report/report_input.h"
#include "report/summary_json.h"
#include "report/verdict_card.h"
#include "report_fixture.h"

namespace bigmac::report {
namespace {

const OutputStyle kVerbose{Verbosity::kVerbose, false, ""};

using testing::fixtures;
using ::testing::HasSubstr;
using ::testing::Not;

ReportInput failed_run() {
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  EXPECT_TRUE(input) << input.error().format();
  return std::move(*input);
}

/// Positions of `parts` in `text`, each required to follow the previous one.
void expect_in_order(const std::string& text, const std::vector<std::string>& parts) {
  std::size_t at = 0;
  for (const std::string& part : parts) {
    const std::size_t found = text.find(part, at);
    ASSERT_NE(found, std::string::npos) << "'" << part << "' missing after byte " << at;
    at = found + part.size();
  }
}

TEST(VerdictCard, SaysWhatFailedWhyWhatToDoAndHowToResume) {
  const ReportInput input = failed_run();
  const auto card = verdict_card(input);
  ASSERT_TRUE(card);
  EXPECT_TRUE(card->failed);
  EXPECT_EQ(card->gate, "pp2");
  EXPECT_EQ(card->gate_index, 2u);
  EXPECT_EQ(card->headline, "gate 3 pp2 failed: loss_vs_baseline");
  EXPECT_EQ(card->check, "loss_vs_baseline");
  EXPECT_THAT(card->check_message, HasSubstr("at step 3: 3.98141 vs 3.93141"));
  EXPECT_EQ(card->diagnosis, "loss_diverges_after_match");
  EXPECT_THAT(card->symptom, HasSubstr("then differs from step 3"));
  EXPECT_THAT(card->cause, HasSubstr("learning-rate schedule"));
  EXPECT_THAT(card->fix, HasSubstr("from step 3"));
  EXPECT_EQ(card->go_back_to, "dp");
  ASSERT_EQ(card->evidence.size(), 1u);
  EXPECT_THAT(card->evidence[0], HasSubstr("rank 1 rank1.log:40: ev=step global_step=3"));
  EXPECT_EQ(card->resume, "bigmac-bringup resume " + (fixtures() / "failed").string());
}

TEST(VerdictCard, WithoutADiagnosisTheCheckSpeaksAndNothingIsInvented) {
  ReportInput input = failed_run();
  input.gates[2].diagnoses.clear();
  input.run_dir = "reports/my run";
  const auto card = verdict_card(input);
  ASSERT_TRUE(card);
  EXPECT_EQ(card->symptom, card->check_message);
  EXPECT_THAT(card->cause, HasSubstr("not identified"));
  EXPECT_EQ(card->go_back_to, "dp");  // the check's route back
  ASSERT_EQ(card->evidence.size(), 1u);
  EXPECT_EQ(card->evidence[0], "rank 1 line 40: step 3 loss=3.98141 (baseline 3.93141)");
  EXPECT_EQ(card->resume, "bigmac-bringup resume 'reports/my run'");
}

TEST(VerdictCard, AStoppedRunHasACardAPassedOneNone) {
  auto passed = load_report_input(fixtures() / "passed", fixtures() / "baseline.json");
  ASSERT_TRUE(passed);
  EXPECT_FALSE(verdict_card(*passed));
  EXPECT_TRUE(summary_json(*passed)["verdict_card"].is_null());
  const auto failed_card = summary_json(failed_run())["verdict_card"];
  EXPECT_EQ(failed_card["go_back_to"], "dp");
  EXPECT_EQ(failed_card["check"], "loss_vs_baseline");

  ReportInput interrupted = *passed;
  interrupted.state.current = "shapes";
  interrupted.state.gates[3].status = run::GateStatus::kInterrupted;
  interrupted.gates[3].record.status = run::GateStatus::kInterrupted;
  ASSERT_EQ(interrupted.state.phase(), run::RunPhase::kInterrupted);
  const auto card = verdict_card(interrupted);
  ASSERT_TRUE(card);
  EXPECT_EQ(card->headline, "run interrupted during gate shapes");
  EXPECT_EQ(card->gate_index, 3u);
  EXPECT_THAT(card->resume, HasSubstr("bigmac-bringup resume "));
  EXPECT_EQ(card->resume_note, "continues at gate shapes");
  EXPECT_FALSE(card->failed);
  EXPECT_EQ(
      format_final_block(interrupted).rfind("STOPPED: run interrupted during gate shapes\n", 0),
      0u);
}

TEST(FailingMetric, TheDivergentMetricStepByStepWithItsTolerance) {
  const ReportInput input = failed_run();
  const auto m = failing_metric(input.gates[2], &*input.baseline);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->metric, "loss");
  ASSERT_TRUE(m->divergence);
  EXPECT_EQ(m->divergence->step, 3);
  ASSERT_EQ(m->steps.size(), 8u);
  for (const MetricStep& s : m->steps) {
    ASSERT_TRUE(s.within);
    EXPECT_EQ(*s.within, s.step < 3) << s.step;  // diverge × (step - 2)²
  }
  EXPECT_EQ(m->first_divergent_index(), 3u);
  EXPECT_NEAR(*m->allowed_rel_diff(3.9), 1e-4, 1e-15);
  const auto range = m->allowed(4.0);
  ASSERT_TRUE(range);
  EXPECT_NEAR(range->first, 4.0 - 4e-4, 1e-12);
  EXPECT_EQ(m->summary(),
            "loss first outside the tolerance (relative 0.0001) at step 3: 3.98141 vs baseline "
            "3.93141 (rel diff 0.0127)");
  // The table rows: how it started, the steps before the divergence, it, after, the end.
  const auto rows = m->rows_to_show(6);
  EXPECT_EQ(rows, (std::vector<std::size_t>{0, 1, 2, 3, 4, 7}));
  // Passed gates have none.
  EXPECT_FALSE(failing_metric(input.gates[1], &*input.baseline));
}

TEST(FailingMetric, ACrashShowsHowFarTheLossGotAndWhatItNeverReached) {
  ReportInput input = failed_run();
  GateReport& gate = input.gates[2];
  gate.steps.resize(4);  // the run died after step 3
  gates::CheckResult crash = gates::fail("exit_status", "rank 1 exited with code 1");
  gate.verdict->results = {crash};
  const auto m = failing_metric(gate, &*input.baseline);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->metric, "loss");
  EXPECT_FALSE(m->divergence);
  ASSERT_EQ(m->steps.size(), 8u);
  EXPECT_FALSE(m->steps[5].run);
  EXPECT_TRUE(m->steps[5].baseline);
  EXPECT_THAT(m->summary(), HasSubstr("over the 4 logged steps"));
  EXPECT_THAT(m->summary(), HasSubstr("what failed was exit_status"));
  const auto rows = m->rows_to_show(4);
  EXPECT_EQ(rows.back(), 3u);  // the last step it logged
}

TEST(FailureFirst, ReportHtmlOpensWithTheCardThenTheChartThenTheFailedGate) {
  const std::string html = render_html(failed_run());
  expect_in_order(html,
                  {"<section class=\"card\" id=\"verdict\">", "gate 3 pp2 failed: loss_vs_baseline",
                   "<th>Evidence</th>", "<th>Cause</th>", "<th>Fix</th>", "<th>Go back to</th>",
                   "<th>Resume</th>", "<section class=\"focus\">", "<polygon class=\"band\"",
                   "<line class=\"marker\"", "first divergent step 3", "relative difference",
                   "<details class=\"gate failed\" id=\"gate-pp2\" open>", "<h2>Gates</h2>",
                   "<details class=\"gate passed\" id=\"gate-single\">",
                   "<details class=\"gate passed\" id=\"gate-dp\">"});
  // Passed gates are collapsed; only the failed one is open.
  std::size_t open = 0;
  for (auto at = html.find(" open>"); at != std::string::npos; at = html.find(" open>", at + 1))
    ++open;
  EXPECT_EQ(open, 1u);
  EXPECT_THAT(html, HasSubstr("<td class=\"result passed\">✓ pass</td>"));
}

TEST(FailureFirst, TheCardEscapesWhatTheLogsSaid) {
  ReportInput input = failed_run();
  input.gates[2].diagnoses[0].symptom = "<img src=x onerror=alert(1)> & \"more\"";
  input.gates[2].diagnoses[0].evidence[0].text = "</pre><script>x</script>";
  const std::string html = render_html(input);
  EXPECT_THAT(html, Not(HasSubstr("<img src=x")));
  EXPECT_THAT(html, Not(HasSubstr("<script>")));
  EXPECT_THAT(html, HasSubstr("&lt;img src=x onerror=alert(1)&gt; &amp; &quot;more&quot;"));
  const std::string md = render_markdown(input);
  EXPECT_THAT(md, HasSubstr("| Symptom | &lt;img src=x"));
}

TEST(FailureFirst, SummaryMdAndTheTerminalFollowTheSameOrder) {
  const ReportInput input = failed_run();
  expect_in_order(render_markdown(input),
                  {"## ❌", "### ❌ gate 3 pp2 failed: loss_vs_baseline", "| Symptom |", "| Cause |",
                   "| Fix |", "| Go back to | `dp` |", "| Resume | `bigmac-bringup",
                   "rank 1 rank1.log:40", "**loss first outside the tolerance",
                   "| 3 | 3.98141 | 3.93141 | 0.0127 | ✗ ← first divergent step |", "### Gates",
                   "| 3 | `pp2` |", "<details open><summary>❌ Gate 3", "✗&nbsp;fail",
                   "<details><summary>✅ Gate 1"});
  expect_in_order(format_final_block(input, kVerbose),
                  {"FAILED gate 3 pp2 failed: loss_vs_baseline", "Symptom:", "Evidence:", "Cause:",
                   "Fix:", "Go back to: dp", "Resume:", "loss first outside",
                   "<- first divergent step", " #  gate", " 3  pp2     FAILED"});
}

}  // namespace
}  // namespace bigmac::report
