#include "logs/parser_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

namespace fs = std::filesystem;

class ParserOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bigmac-parser-options-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  tl::expected<config::Config, Errors> load(const std::string& toml,
                                            std::vector<std::string> sets = {}) {
    const fs::path file = dir_ / "trainer.toml";
    std::ofstream(file) << toml;
    config::ConfigSources sources;
    sources.file = file.string();
    sources.overrides = std::move(sets);
    return config::load_config(sources);
  }

  fs::path dir_;
};

TEST_F(ParserOptionsTest, FormatAndFieldsComeFromTheConfiguration) {
  auto config = load(
      "[trainer]\nlog_format = \"regex\"\n"
      "[logs.fields]\nstep = 'it (\\d+):'\nloss = 'loss ([0-9.]+)'\n");
  ASSERT_TRUE(config) << config.error().front().format();
  auto options = parser_options(*config);
  ASSERT_TRUE(options) << options.error().format();
  EXPECT_EQ(options->format, LogFormat::kRegex);
  ASSERT_NE(options->custom(), nullptr);
  auto parsed = testing::parse_text("it 3: loss 4.44\n", options->format, options->custom());
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].global_step, 2);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 4.44);
}

TEST_F(ParserOptionsTest, DefaultsAreAutoWithoutAMap) {
  auto config = load("[trainer]\nlog_format = \"plain\"\n");
  ASSERT_TRUE(config) << config.error().front().format();
  auto options = parser_options(*config);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->format, LogFormat::kPlain);
  EXPECT_EQ(options->custom(), nullptr);
  auto none = load("");
  ASSERT_TRUE(none);
  EXPECT_EQ(parser_options(*none)->format, LogFormat::kAuto);
}

TEST_F(ParserOptionsTest, ABadRegexNamesTheFileLineAndKey) {
  auto config = load("[trainer]\nlog_format = \"regex\"\n\n[logs.fields]\nloss = 'loss=(\\d+'\n");
  ASSERT_TRUE(config) << config.error().front().format();
  auto options = parser_options(*config);
  ASSERT_FALSE(options);
  const Error& e = options.error();
  EXPECT_EQ(e.kind, ErrorKind::kConfig);
  EXPECT_EQ(e.key, "logs.fields.loss");
  EXPECT_EQ(e.file, (dir_ / "trainer.toml").string());
  EXPECT_EQ(e.line, 5);
  EXPECT_NE(e.message.find("malformed regex"), std::string::npos) << e.message;
  EXPECT_EQ(exit_code_for(e.kind), ExitCode::kBadInput);
}

TEST_F(ParserOptionsTest, ABadRegexFromTheCommandLineNamesTheSet) {
  auto config = load("", {"logs.fields.lr=(a)(b)"});
  ASSERT_TRUE(config) << config.error().front().format();
  auto options = parser_options(*config);
  ASSERT_FALSE(options);
  EXPECT_EQ(options.error().key, "logs.fields.lr");
  EXPECT_EQ(options.error().file, "--set logs.fields.lr=(a)(b)");
  EXPECT_NE(options.error().message.find("2 capture groups"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::logs
