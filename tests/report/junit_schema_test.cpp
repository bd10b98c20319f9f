// junit.xml must validate against the JUnit schema CI systems read (junit.xsd here, checked
// with xmllint from Debian's libxml2-utils), including when check messages carry characters
// XML forbids or reserves.

#include <gtest/gtest.h>

#include "report/junit_xml.h"
#include "report/report_input.h"
#include "report_fixture.h"
#include "testing/run_program.h"

namespace bigmac::report {
namespace {

using testing::fixtures;

class JunitSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    xmllint_ = testing::find_program("xmllint");
    if (xmllint_.empty()) GTEST_SKIP() << "xmllint not installed (Debian package libxml2-utils)";
  }

  /// xmllint's verdict on `xml` against junit.xsd: exit code and what it printed.
  bigmac::testing::ProgramResult validate(const std::string& xml) {
    const auto file = scratch_.path() / "junit.xml";
    testing::spill(file, xml);
    const auto schema = std::filesystem::path(BIGMAC_SOURCE_DIR) / "tests/report/junit.xsd";
    return bigmac::testing::run_program(
        {xmllint_, "--noout", "--nonet", "--schema", schema.string(), file.string()});
  }

  std::string xmllint_;
  testing::ScratchDir scratch_;
};

TEST_F(JunitSchema, PassedAndFailedRunsValidate) {
  for (const char* run : {"passed", "failed"}) {
    auto input = load_report_input(fixtures() / run, fixtures() / "baseline.json");
    ASSERT_TRUE(input) << input.error().format();
    const auto result = validate(render_junit(*input));
    EXPECT_EQ(result.exit_code, 0) << run << ": " << result.err;
  }
}

TEST_F(JunitSchema, HostileTextStillValidatesAndSurvivesEscaped) {
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  auto& pp2 = input->gates[2];
  ASSERT_TRUE(pp2.verdict);
  const std::string hostile = "a\x01NUL\xff\xc3(\x1b[31m red ]]> </failure> <x & \"q\" 'a'";
  pp2.verdict->results.back().message = hostile;
  pp2.diagnoses.front().fix = hostile;
  input->state.run_id = "<run&id>";
  const std::string xml = render_junit(*input);
  const auto result = validate(xml);
  EXPECT_EQ(result.exit_code, 0) << result.err << "\n" << xml;
  EXPECT_NE(xml.find("]]&gt; &lt;/failure&gt; &lt;x &amp; &quot;q&quot; &#39;a&#39;"),
            std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_EQ(xml.find('\x1b'), std::string::npos);
}

TEST_F(JunitSchema, TheSchemaRejectsWhatCiWouldReject) {
  // Control: a test case without its name and with two outcomes must not validate, or the
  // tests above prove nothing.
  const auto result = validate(
      "<?xml version=\"1.0\"?><testsuites><testsuite name=\"x\" tests=\"1\"><testcase "
      "classname=\"c\"><failure/><skipped/></testcase></testsuite></testsuites>\n");
  EXPECT_NE(result.exit_code, 0);
}

TEST(Junit, OneSuitePerGateOneCasePerCheckAndTheDiagnosisInTheFailure) {
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  ASSERT_TRUE(input);
  const std::string xml = render_junit(*input);
  std::size_t suites = 0;
  for (auto at = xml.find("<testsuite "); at != std::string::npos;
       at = xml.find("<testsuite ", at + 1))
    ++suites;
  EXPECT_EQ(suites, 5u);
  EXPECT_NE(xml.find("name=\"03-pp2\" tests=\"7\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"loss diverges from the baseline at step 3: 3.98141 vs "
                     "3.93141"),
            std::string::npos);
  EXPECT_NE(xml.find("Go back to: dp"), std::string::npos);
  EXPECT_NE(xml.find("Cause: a setting that acts after the first steps differs"),
            std::string::npos);
  EXPECT_NE(xml.find("name=\"04-shapes\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\""),
            std::string::npos);
}

}  // namespace
}  // namespace bigmac::report
