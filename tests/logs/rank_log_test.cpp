#include "logs/rank_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "logs/parse_summary.h"

namespace bigmac::logs {
namespace {

namespace fs = std::filesystem;

class LogFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("bigmac-logs-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  fs::path dir_;
};

TEST(RankFromPath, CommonNames) {
  EXPECT_EQ(rank_from_path("/x/rank3.log"), 3);
  EXPECT_EQ(rank_from_path("rank_12.jsonl"), 12);
  EXPECT_EQ(rank_from_path("attempt1/stdout-rank-0.txt"), 0);
  EXPECT_EQ(rank_from_path("/ranks/train.log"), -1);
  EXPECT_EQ(rank_from_path("rank.log"), -1);
}

TEST_F(LogFiles, MergesFilesByRank) {
  std::string a = write("rank0.log",
                        "{\"ev\":\"run\",\"rank\":0,\"world_size\":2}\n"
                        "{\"ev\":\"step\",\"rank\":0,\"global_step\":0,\"loss\":2}\n"
                        "{\"ev\":\"step\",\"rank\":0,\"global_step\":1,\"loss\":1.5}\n"
                        "warning: something\n");
  std::string b = write("rank1.log",
                        "{\"ev\":\"run\",\"world_size\":2}\n"  // no rank field: from the name
                        "{\"ev\":\"heartbeat\",\"global_step\":0}\n"
                        "{\"ev\":\"step\",\"global_step\":\"x\"}\n");
  std::string c = write("combined.log", "[rank1]:{\"ev\":\"done\",\"steps\":2}\nhello\n");
  auto logs = load_logs({a, b, c});
  ASSERT_TRUE(logs.has_value()) << logs.error().format();
  ASSERT_EQ(logs->ranks.size(), 3u);
  const RankLog* r0 = logs->find(0);
  const RankLog* r1 = logs->find(1);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r0->steps.size(), 2u);
  EXPECT_EQ(r0->context.seen(), 1);
  ASSERT_NE(r1->run(), nullptr);
  EXPECT_EQ(r1->run()->at.rank, 1);
  EXPECT_EQ(r1->heartbeats.size(), 1u);
  EXPECT_NE(r1->done(), nullptr);
  EXPECT_EQ(r1->unparseable, 1);
  EXPECT_EQ(r1->sources, (std::vector<std::string>{b, c}));
  EXPECT_EQ(logs->ranks.back().rank, -1);  // `hello` from a file without a rank in its name
  EXPECT_EQ(logs->files.size(), 3u);
}

TEST_F(LogFiles, UnreadableFileIsAnInputError) {
  auto logs = load_logs({(dir_ / "missing.log").string()});
  ASSERT_FALSE(logs.has_value());
  EXPECT_EQ(logs.error().kind, ErrorKind::kInput);
  EXPECT_NE(logs.error().file.find("missing.log"), std::string::npos);
  auto directory = load_logs({dir_.string()});
  EXPECT_FALSE(directory.has_value());
}

TEST_F(LogFiles, RunParseTextAndJson) {
  std::string a = write("rank0.log",
                        "{\"ev\":\"step\",\"global_step\":0,\"loss\":2,\"lr\":0.1}\n"
                        "{\"ev\":\"step\",\"global_step\":4,\"loss\":NaN}\n"
                        "{\"ev\":\"step\",\"global_step\":5,\"loss\"\n"
                        "bad \xff\xfe bytes\n");
  std::ostringstream out, err;
  ASSERT_EQ(run_parse({a}, LogFormat::kAuto, ParseOutput::kText, out, err), 0) << err.str();
  std::string text = out.str();
  EXPECT_NE(text.find("rank 0"), std::string::npos) << text;
  EXPECT_NE(text.find("2 steps 0..4 [loss lr]"), std::string::npos) << text;
  EXPECT_NE(text.find("1 unparseable"), std::string::npos) << text;
  EXPECT_NE(text.find(":3: invalid JSON"), std::string::npos) << text;

  std::ostringstream json_out;
  ASSERT_EQ(run_parse({a}, LogFormat::kAuto, ParseOutput::kJson, json_out, err), 0);
  auto doc = nlohmann::json::parse(json_out.str());
  EXPECT_EQ(doc["files"][0]["format"], "bigmac");
  EXPECT_EQ(doc["files"][0]["unparseable"], 1);
  EXPECT_EQ(doc["files"][0]["unparseable_examples"][0]["line"], 3);
  EXPECT_EQ(doc["ranks"][0]["rank"], 0);
  EXPECT_EQ(doc["ranks"][0]["steps"], 2);
  EXPECT_EQ(doc["ranks"][0]["first_step"], 0);
  EXPECT_EQ(doc["ranks"][0]["last_step"], 4);
  EXPECT_EQ(doc["ranks"][0]["context_lines"], 1);
  EXPECT_EQ(doc["ranks"][0]["events"]["step"], 2);
}

TEST_F(LogFiles, RunParseUnreadableExitsTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(run_parse({(dir_ / "nope").string()}, LogFormat::kAuto, ParseOutput::kText, out, err),
            2);
  EXPECT_NE(err.str().find("nope"), std::string::npos);
  EXPECT_EQ(run_parse({}, LogFormat::kRegex, ParseOutput::kText, out, err), 2);
}

TEST(ContextWindow, KeepsHeadAndTail) {
  ContextWindow window(2, 3);
  for (int i = 0; i < 10; ++i) {
    TextLine line;
    line.at.line = i;
    window.add(line);
  }
  auto lines = window.lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].at.line, 0);
  EXPECT_EQ(lines[1].at.line, 1);
  EXPECT_EQ(lines[2].at.line, 7);
  EXPECT_EQ(lines[4].at.line, 9);
  EXPECT_EQ(window.seen(), 10);
  EXPECT_EQ(window.dropped(), 5);
}

TEST(LoadText, InMemory) {
  auto logs = load_text("BIGMAC ev=step global_step=0 loss=1\n", "mem", LogFormat::kAuto, 4);
  ASSERT_EQ(logs.ranks.size(), 1u);
  EXPECT_EQ(logs.ranks[0].rank, 4);
  EXPECT_EQ(logs.ranks[0].steps.size(), 1u);
}

}  // namespace
}  // namespace bigmac::logs
