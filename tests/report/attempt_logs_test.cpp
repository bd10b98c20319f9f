// Reading an attempt folder's rank files again, as the live watch read them.

#include "report/attempt_logs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "report_fixture.h"

namespace bigmac::report {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

TEST(AttemptLogs, TheRanksOwnLogFileWinsElseWhatItPrinted) {
  testing::ScratchDir dir;
  // Rank 0 wrote its events to its log file and printed a progress line.
  write(dir.path() / "rank0.log",
        "{\"ev\":\"step\",\"rank\":0,\"global_step\":0,\"loss\":2.5}\n"
        "{\"ev\":\"step\",\"rank\":0,\"global_step\":1,\"loss\":2.4}\n");
  write(dir.path() / "rank0.stdout", "{\"ev\":\"step\",\"rank\":0,\"global_step\":0,\"loss\":9}\n");
  // Rank 1 printed its steps in a format of its own; its log file stayed empty.
  write(dir.path() / "rank1.log", "");
  write(dir.path() / "rank1.stdout", "it 1 | xent 3.5\nit 2 | xent 3.0\n");
  write(dir.path() / "rank1.stderr", "warning: something\n");
  write(dir.path() / "launch-plan.json", "{}");

  auto map = logs::FieldMap::compile({{"step", R"(^it (\d+))"}, {"loss", R"(xent (\S+))"}});
  ASSERT_TRUE(map.has_value());
  logs::ParserOptions parser(logs::LogFormat::kRegex);
  parser.fields = *map;
  auto ranks = read_attempt_logs(dir.path(), parser);
  ASSERT_TRUE(ranks) << ranks.error().format();
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].rank, 0);
  ASSERT_EQ((*ranks)[0].steps.size(), 2u);
  EXPECT_DOUBLE_EQ(*(*ranks)[0].steps[0].loss, 2.5);
  EXPECT_EQ((*ranks)[1].rank, 1);
  ASSERT_EQ((*ranks)[1].steps.size(), 2u);
  EXPECT_EQ((*ranks)[1].steps[1].global_step, 1);
  EXPECT_DOUBLE_EQ(*(*ranks)[1].steps[1].loss, 3.0);

  // Read as `auto`, rank 1's lines are no steps: the parser options decide.
  auto as_auto = read_attempt_logs(dir.path(), {});
  ASSERT_TRUE(as_auto);
  ASSERT_EQ(as_auto->size(), 2u);
  EXPECT_TRUE((*as_auto)[1].steps.empty());
}

TEST(AttemptLogs, AFolderWithoutRankFilesHasNoRanks) {
  testing::ScratchDir dir;
  write(dir.path() / "verdict.json", "{}");
  auto ranks = read_attempt_logs(dir.path(), {});
  ASSERT_TRUE(ranks);
  EXPECT_TRUE(ranks->empty());
}

}  // namespace
}  // namespace bigmac::report
