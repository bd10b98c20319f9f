// What a gate could not check reaches every report: JUnit <skipped message=...> (a failure when
// the gate requires the check), summary.md and report.html as warnings, the terminal table.

#include <gtest/gtest.h>

#include "report/html_report.h"
#include "report/junit_xml.h"
#include "report/markdown_summary.h"
#include "report/progress.h"
#include "report/report_input.h"
#include "report_fixture.h"

namespace bigmac::report {
namespace {

using testing::fixtures;

ReportInput with_unobservable(bool required) {
  auto input = load_report_input(fixtures() / "passed", fixtures() / "baseline.json");
  EXPECT_TRUE(input) << input.error().format();
  gates::UnobservableFinding u{"grad_norm",
                               "log `\"grad_norm\":G` in each `step` event",
                               {"grad_norm_nonzero", "grad_norm_stable"},
                               {}};
  if (required) u.required = {"grad_norm_stable"};
  input->gates[0].verdict->unobservable.push_back(u);
  return std::move(*input);
}

TEST(UnobservableReport, JunitSkipsAnOptionalCheckWithWhatToLog) {
  const std::string xml = render_junit(with_unobservable(false));
  EXPECT_NE(xml.find("<testcase name=\"grad_norm_nonzero\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"unobservable: the trainer logs no grad_norm; log "
                     "`&quot;grad_norm&quot;:G` in each `step` event\"/>"),
            std::string::npos)
      << xml;
}

TEST(UnobservableReport, JunitFailsARequiredOne) {
  const std::string xml = render_junit(with_unobservable(true));
  EXPECT_NE(xml.find("type=\"unobservable:grad_norm\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"unobservable"), std::string::npos) << xml;
}

TEST(UnobservableReport, SummaryMdHtmlAndTerminalWarn) {
  const ReportInput input = with_unobservable(false);
  const std::string md = render_markdown(input);
  EXPECT_NE(md.find("### Unobservable checks"), std::string::npos) << md;
  EXPECT_NE(md.find("⚠️ gate `single`: `grad_norm_nonzero`, `grad_norm_stable`"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("(2 unobservable)"), std::string::npos) << md;
  const std::string html = render_html(input);
  EXPECT_NE(html.find("⚠ unobservable"), std::string::npos);
  EXPECT_NE(html.find(", 2 unobservable"), std::string::npos);
  const std::string table = format_final_block(input, {Verbosity::kVerbose, false, ""});
  EXPECT_NE(table.find("warning (single): grad_norm_nonzero, grad_norm_stable — unobservable"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace bigmac::report
