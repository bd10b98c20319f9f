// core/input_file: what is not a regular file is refused at once with exit 2, never read
// forever (issue 20, D7 and D15).

#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/json_file.h"

namespace bigmac {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-input-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(InputFileTest, WhatIsNotARegularFileIsRefusedSayingWhatItIs) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
  fs::create_directories(dir_ / "folder");
  const std::pair<fs::path, std::string> cases[] = {
      {dir_ / "pipe", "a FIFO (named pipe)"},
      {dir_ / "folder", "a directory"},
      {"/dev/zero", "a character device"},
      {"/dev/null", "a character device"},
  };
  for (const auto& [path, kind] : cases) {
    auto text = read_file(path);
    ASSERT_FALSE(text) << path;
    EXPECT_EQ(exit_code_for(text.error().kind), ExitCode::kBadInput);
    EXPECT_EQ(text.error().file, path.string());
    EXPECT_NE(text.error().message.find("it is " + kind + ", not a regular file"),
              std::string::npos)
        << text.error().format();
    EXPECT_FALSE(open_input_stream(path)) << path;
  }
}

TEST_F(InputFileTest, ALinkToARegularFileIsRead) {
  std::ofstream(dir_ / "real") << "text";
  fs::create_symlink(dir_ / "real", dir_ / "link");
  EXPECT_EQ(read_file(dir_ / "link").value(), "text");
}

TEST_F(InputFileTest, ReadingIsBounded) {
  std::ofstream(dir_ / "big") << std::string(4096, 'x');
  auto text = read_file(dir_ / "big", 1024);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("4096 bytes"), std::string::npos) << text.error().format();
  EXPECT_TRUE(read_file(dir_ / "big", 4096));
}

TEST(JsonFile, ErrorsSayWhereAndWhy) {
  auto truncated = parse_json("{\"a\": [1, 2", "b.json");
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().file, "b.json");
  EXPECT_EQ(truncated.error().line, 1);
  EXPECT_NE(truncated.error().hint.find("truncated"), std::string::npos)
      << truncated.error().format();

  auto nan = parse_json("{\n  \"loss\": NaN\n}", "b.json");
  ASSERT_FALSE(nan);
  EXPECT_EQ(nan.error().line, 2);
  EXPECT_NE(nan.error().hint.find("'NaN' is not a JSON number"), std::string::npos)
      << nan.error().format();

  auto empty = parse_json(" \n", "b.json");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("the file is empty"), std::string::npos);

  auto trailing = parse_json("{} x", "b.json");
  ASSERT_FALSE(trailing);
  EXPECT_NE(trailing.error().hint.find("more after the JSON value"), std::string::npos)
      << trailing.error().format();
  EXPECT_EQ(trailing.error().hint.find("truncated"), std::string::npos);
}

TEST(JsonFile, TextThatIsNotUtf8IsWrittenWithAReplacementNotAnException) {
  // A rank's progress bar cut mid-character when the rank was stopped: "\xe2\x96" of a block.
  const nlohmann::json doc = {{"line", "loss 5.1 |\xe2\x96\x88\xe2\x96"}, {"ok", "caf\xc3\xa9"}};
  EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);  // what json_text spares
  const std::string text = json_text(doc, 2);
  auto back = parse_json(text, "result.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ((*back)["line"], "loss 5.1 |\xe2\x96\x88\xef\xbf\xbd");  // U+FFFD for the cut one
  EXPECT_EQ((*back)["ok"], "caf\xc3\xa9");
  EXPECT_EQ(json_text(nlohmann::json{{"a", 1}}), R"({"a":1})");
}

TEST(JsonFile, IntegersNeverWrap) {
  EXPECT_EQ(json_integer(nlohmann::json::parse("9223372036854775807")), INT64_MAX);
  EXPECT_EQ(json_integer(nlohmann::json::parse("-9223372036854775808")), INT64_MIN);
  // get<std::int64_t>() would make this -1.
  EXPECT_FALSE(json_integer(nlohmann::json::parse("18446744073709551615")));
  EXPECT_FALSE(json_integer(nlohmann::json::parse("1.5")));
  EXPECT_FALSE(json_integer(nlohmann::json::parse("\"1\"")));
  const auto j = nlohmann::json::parse(R"({"rank": 1099511627776, "ok": 3, "s": "x"})");
  EXPECT_EQ(json_int(j, "rank", -1), -1);  // past int
  EXPECT_EQ(json_int(j, "ok", -1), 3);
  EXPECT_EQ(json_int(j, "s", -1), -1);
  EXPECT_EQ(json_int(j, "absent", 7), 7);
}

}  // namespace
}  // namespace bigmac
