// Reading a run directory: the whole contract, and a run killed mid-gate (missing or partial
// files) read with notes instead of a crash.

#include "report/report_input.h"

#include <gtest/gtest.h>

#include "report/report_files.h"
#include "report/step_comparison.h"
#include "report_fixture.h"

namespace bigmac::report {
namespace {

namespace fs = std::filesystem;
using testing::fixtures;

TEST(ReportInput, ReadsEveryPartOfAFailedRun) {
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  EXPECT_EQ(input->state.run_id, "20251129-110000");
  ASSERT_TRUE(input->baseline);
  EXPECT_EQ(input->baseline->steps.size(), 8u);
  ASSERT_EQ(input->gates.size(), 5u);
  const GateReport& pp2 = input->gates[2];
  EXPECT_EQ(pp2.attempt_dir, "03-pp2.1");
  ASSERT_TRUE(pp2.verdict);
  EXPECT_FALSE(pp2.verdict->passed);
  ASSERT_EQ(pp2.diagnoses.size(), 1u);
  EXPECT_EQ(pp2.diagnoses[0].gate, "dp");
  EXPECT_EQ(pp2.diagnoses[0].evidence.at(0).file, "rank1.log");
  ASSERT_TRUE(pp2.result);
  EXPECT_EQ(pp2.result->ranks.size(), 2u);
  EXPECT_EQ(pp2.ranks_logged, 2);
  EXPECT_EQ(pp2.steps.size(), 8u);  // from the last stage, the owner
  EXPECT_EQ(pp2.steps.front().at.rank, 1);
  EXPECT_EQ(pp2.micro_batches.size(), 2u * 8u * 8u);  // 2 stages x 8 steps x 4 mb x F/B
  EXPECT_TRUE(pp2.notes.empty()) << pp2.notes.front();
  EXPECT_TRUE(input->gates[3].attempt_dir.empty());  // never launched

  const StepComparison c = compare_steps(pp2, &*input->baseline);
  EXPECT_EQ(c.compared, 8);
  EXPECT_EQ(c.max_diff_step, 7);
  EXPECT_NEAR(c.max_abs_loss_diff, 0.05 * 25, 1e-9);
}

TEST(ReportInput, MissingStateIsAnInputErrorNamingTheFile) {
  testing::ScratchDir dir;
  auto input = load_report_input(dir.path());
  ASSERT_FALSE(input);
  EXPECT_NE(input.error().format().find("state.json"), std::string::npos) << input.error().format();
}

TEST(ReportInput, UnreadableBaselineIsANoteNotAnError) {
  auto input = load_report_input(fixtures() / "passed", fixtures() / "no-such-baseline.json");
  ASSERT_TRUE(input);
  EXPECT_FALSE(input->baseline);
  ASSERT_EQ(input->notes.size(), 1u);
  EXPECT_NE(input->notes[0].find("no-such-baseline.json"), std::string::npos);
}

TEST(ReportInput, RunKilledMidGateReadsWithNotesAndStillRendersEveryFormat) {
  testing::ScratchDir dir;
  const fs::path run = dir.path() / "run";
  fs::copy(fixtures() / "failed", run, fs::copy_options::recursive);
  // The orchestrator died while pp2 ran: no verdict, no result, a log cut mid-line, and
  // state.json still says running.
  const fs::path pp2 = run / "03-pp2.1";
  fs::remove(pp2 / "verdict.json");
  fs::remove(pp2 / "result.json");
  fs::remove(pp2 / "diagnosis.json");
  std::string log = testing::slurp(pp2 / "rank1.log");
  testing::spill(pp2 / "rank1.log", log.substr(0, log.size() / 2));
  std::string state = testing::slurp(run / "state.json");
  const auto at = state.find("\"failed\"", state.find("\"pp2\""));
  state.replace(at, 8, "\"running\"");
  testing::spill(run / "state.json", state);
  // And dp's folder vanished altogether; its verdict.json in single is garbage.
  fs::remove_all(run / "02-dp.1");
  testing::spill(run / "01-single.1" / "verdict.json", "{\"gate\": \"sing");

  auto input = load_report_input(run, fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  const GateReport& killed = input->gates[2];
  EXPECT_EQ(killed.record.status, run::GateStatus::kRunning);
  EXPECT_FALSE(killed.verdict);
  ASSERT_FALSE(killed.notes.empty());
  EXPECT_NE(killed.notes[0].find("did not finish"), std::string::npos) << killed.notes[0];
  EXPECT_FALSE(killed.steps.empty());  // the half log still shows how far it got
  EXPECT_LT(killed.steps.size(), 8u);
  ASSERT_FALSE(input->gates[1].notes.empty());
  EXPECT_NE(input->gates[1].notes[0].find("02-dp.1 is missing"), std::string::npos);
  ASSERT_FALSE(input->gates[0].notes.empty());
  EXPECT_NE(input->gates[0].notes[0].find("verdict.json is not valid JSON"), std::string::npos);

  auto written = write_reports(*input, run);
  ASSERT_TRUE(written) << written.error().format();
  EXPECT_EQ(written->size(), 4u);
  const std::string junit = testing::slurp(run / "junit.xml");
  EXPECT_NE(junit.find("<error message="), std::string::npos) << junit;
}

TEST(ReportInput, AttemptResultRoundTrips) {
  launch::RankEnding ok;
  ok.rank = 0;
  ok.known = true;
  ok.exit_code = 0;
  ok.duration_s = 3.2;
  ok.node = "n1";
  launch::RankEnding killed;
  killed.rank = 1;
  killed.known = true;
  killed.signal = "SIGKILL";
  killed.duration_s = 3.1;
  killed.first_error_line = "boom";
  killed.node = "n2";
  killed.node_failed = true;
  killed.error_lines = {"Traceback", "boom"};
  const AttemptResult r{"failed", 1764412800.5, 3.25, {ok, killed}};
  const AttemptResult back = attempt_result_from_json(to_json(r));
  EXPECT_EQ(back.status, "failed");
  EXPECT_DOUBLE_EQ(back.started_at, 1764412800.5);
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[0].exit_code, 0);
  EXPECT_FALSE(back.ranks[1].exit_code);
  EXPECT_EQ(back.ranks[1].signal, "SIGKILL");
  EXPECT_EQ(back.ranks[1].first_error_line, "boom");
  EXPECT_EQ(back.ranks[0].node, "n1");
  EXPECT_TRUE(back.ranks[1].node_failed);
  EXPECT_EQ(back.ranks[1].error_lines, (std::vector<std::string>{"Traceback", "boom"}));
  EXPECT_TRUE(back.ranks[0].known);
  EXPECT_EQ(back.ranks[1].describe(), "killed by SIGKILL");
}

TEST(ReportFiles, WritesAllFourAndAppendsTheStepSummary) {
  testing::ScratchDir dir;
  fs::copy(fixtures() / "passed", dir.path() / "run", fs::copy_options::recursive);
  auto input = load_report_input(dir.path() / "run", fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  const fs::path step_summary = dir.path() / "step_summary.md";
  testing::spill(step_summary, "earlier step\n");
  auto written = write_reports(*input, dir.path() / "run", step_summary.string());
  ASSERT_TRUE(written) << written.error().format();
  for (const char* name : {"summary.json", "junit.xml", "summary.md", "report.html"}) {
    EXPECT_TRUE(fs::exists(dir.path() / "run" / name)) << name;
  }
  const std::string appended = testing::slurp(step_summary);
  EXPECT_EQ(appended.rfind("earlier step\n", 0), 0u);
  EXPECT_NE(appended.find("all 5 selected gates passed"), std::string::npos) << appended;
}

TEST(ReportFiles, FormatNames) {
  EXPECT_EQ(parse_report_format("html").value(), ReportFormat::kHtml);
  EXPECT_EQ(parse_report_format("md").value(), ReportFormat::kMarkdown);
  EXPECT_EQ(parse_report_format("junit").value(), ReportFormat::kJunit);
  EXPECT_EQ(parse_report_format("json").value(), ReportFormat::kJson);
  auto bad = parse_report_format("pdf");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kUsage);
  EXPECT_NE(bad.error().format().find("html, md, json, junit"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::report
