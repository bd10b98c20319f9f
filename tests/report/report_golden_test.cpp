// Golden tests: each report format rendered from the fixed run directories in fixtures/
// (a passed run and a run failed at pp2 with a diagnosis) must equal the checked-in file in
// golden/. After an intended change to a format, regenerate them and review the diff:
//
//   BIGMAC_UPDATE_GOLDEN=1 ./build/tests/report/bigmac_report_tests --gtest_filter='*Golden*'
//   git diff tests/report/golden/
//
// (a golden file no test writes any more is deleted by hand).
//
// Fixtures themselves come from fixtures/make_fixtures.py.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "report/progress.h"
#include "report/report_files.h"
#include "report/report_input.h"
#include "report_fixture.h"

namespace bigmac::report {
namespace {

using testing::fixtures;

/// Absolute paths differ from one checkout to another; the golden files hold "<fixtures>".
std::string normalized(std::string text) {
  const std::string root = fixtures().string();
  for (auto at = text.find(root); at != std::string::npos; at = text.find(root, at)) {
    text.replace(at, root.size(), "<fixtures>");
  }
  return text;
}

void expect_golden(const std::string& actual, const std::string& name) {
  const auto path = std::filesystem::path(BIGMAC_SOURCE_DIR) / "tests/report/golden" / name;
  if (const char* update = std::getenv("BIGMAC_UPDATE_GOLDEN"); update && *update == '1') {
    std::filesystem::create_directories(path.parent_path());
    testing::spill(path, actual);
    GTEST_SKIP() << "rewrote " << path;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing; run with BIGMAC_UPDATE_GOLDEN=1";
  // A plain EXPECT_EQ on a 40 KB page prints both; say where they first differ instead.
  const std::string expected = testing::slurp(path);
  if (actual == expected) return;
  std::size_t at = 0;
  while (at < actual.size() && at < expected.size() && actual[at] == expected[at]) ++at;
  const std::size_t from = at > 120 ? at - 120 : 0;
  ADD_FAILURE() << name << " differs from its golden file at byte " << at << "\nexpected: ..."
                << expected.substr(from, 240) << "\nactual:   ..." << actual.substr(from, 240)
                << "\n(after an intended change: BIGMAC_UPDATE_GOLDEN=1)";
}

struct GoldenCase {
  const char* run;
  ReportFormat format;
  const char* extension;
};

void PrintTo(const GoldenCase& c, std::ostream* out) { *out << c.run << "." << c.extension; }

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, FormatMatchesCheckedInFile) {
  const GoldenCase& c = GetParam();
  auto input = load_report_input(fixtures() / c.run, fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  expect_golden(normalized(render_report(*input, c.format)),
                std::string(c.run) + "." + c.extension);
}

INSTANTIATE_TEST_SUITE_P(
    Reports, Golden,
    ::testing::Values(GoldenCase{"passed", ReportFormat::kJson, "summary.json"},
                      GoldenCase{"passed", ReportFormat::kJunit, "junit.xml"},
                      GoldenCase{"passed", ReportFormat::kMarkdown, "summary.md"},
                      GoldenCase{"passed", ReportFormat::kHtml, "report.html"},
                      GoldenCase{"failed", ReportFormat::kJson, "summary.json"},
                      GoldenCase{"failed", ReportFormat::kJunit, "junit.xml"},
                      GoldenCase{"failed", ReportFormat::kMarkdown, "summary.md"},
                      GoldenCase{"failed", ReportFormat::kHtml, "report.html"}),
    [](const auto& param_info) {
      std::string name = std::string(param_info.param.run) + "_" + param_info.param.extension;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST(GoldenTerminal, FinalBlockOfTheFailedRun) {
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  expect_golden(normalized(format_final_block(*input, {Verbosity::kVerbose, false, ""})),
                "failed.final.txt");
}

}  // namespace
}  // namespace bigmac::report
