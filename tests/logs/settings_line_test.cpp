#include "logs/settings_line.h"

#include <gtest/gtest.h>

#include "logs/rank_log.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::parse_text;

TEST(SettingsLine, ReadsTheEffectiveConfiguration) {
  SettingsRecord s;
  std::string error;
  ASSERT_EQ(read_settings_line("[cfg] world_size=8 pp=4 tp=1 dp=2 micro_bs=1 accum=8 "
                               "global_bs=16 split_points=[3, 6, 9] seq_len=128 seed=7 "
                               "max_iters=20 schedule=1f1b",
                               s, error),
            LineMatch::kRecord)
      << error;
  EXPECT_EQ(s.world_size, 8);
  EXPECT_EQ(s.pp, 4);
  EXPECT_EQ(s.tp, 1);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.micro_batch_size, 1);
  EXPECT_EQ(s.grad_accum, 8);
  EXPECT_EQ(s.global_batch, 16);
  EXPECT_EQ(s.seq_length, 128);
  EXPECT_EQ(s.seed, 7);
  EXPECT_EQ(s.max_steps, 20);
  ASSERT_TRUE(s.split_points.has_value());
  EXPECT_EQ(*s.split_points, (std::vector<std::int64_t>{3, 6, 9}));
  ASSERT_EQ(s.other.size(), 1u);  // a key it does not know, kept as written
  EXPECT_EQ(s.other[0], (std::pair<std::string, std::string>{"schedule", "1f1b"}));
}

TEST(SettingsLine, AliasesAndAbsentValues) {
  SettingsRecord s;
  std::string error;
  ASSERT_EQ(read_settings_line("[cfg] pipeline_parallel_size=2 gradient_accumulation_steps=4 "
                               "micro_batch_size=2 split_points=[] ",
                               s, error),
            LineMatch::kRecord);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.grad_accum, 4);
  EXPECT_EQ(s.micro_batch_size, 2);
  EXPECT_FALSE(s.world_size.has_value());
  EXPECT_TRUE(s.split_points->empty());
  ASSERT_EQ(read_settings_line("[cfg] split_points=auto", s, error), LineMatch::kRecord);
  EXPECT_FALSE(s.split_points.has_value());
  EXPECT_EQ(s.other[0].second, "auto");
}

TEST(SettingsLine, MalformedLinesSayWhatIsWrong) {
  SettingsRecord s;
  std::string error;
  EXPECT_EQ(read_settings_line("[cfg] pp=four", s, error), LineMatch::kBad);
  EXPECT_EQ(error, "[cfg]: pp=four is not an integer");
  EXPECT_EQ(read_settings_line("[cfg] world_size", s, error), LineMatch::kBad);
  EXPECT_EQ(error, "[cfg]: expected key=value, got 'world_size'");
  EXPECT_EQ(read_settings_line("[cfg] split_points=[1, 2", s, error), LineMatch::kBad);
  EXPECT_EQ(read_settings_line("[cfg] split_points=[1, x]", s, error), LineMatch::kBad);
  EXPECT_EQ(read_settings_line("cfg pp=2", s, error), LineMatch::kNotMine);
}

TEST(SettingsLine, IsARecordInEveryFormatAndLocksNone) {
  // Before Megatron lines, and among bigmac JSON lines: a record of its own each time.
  auto megatron = parse_text(
      "[rank0]:[cfg] world_size=2 pp=1 tp=1 dp=2\n"
      " [2024-05-01 12:00:07] iteration        1/     100 | lm loss: 7.0 |\n");
  EXPECT_EQ(megatron.stats.detected, LogFormat::kMegatron);
  auto settings = megatron.all<SettingsRecord>();
  ASSERT_EQ(settings.size(), 1u);
  EXPECT_EQ(settings[0].at.rank, 0);
  EXPECT_EQ(settings[0].dp, 2);
  EXPECT_EQ(megatron.all<StepRecord>().size(), 1u);

  auto bigmac = parse_text("{\"ev\":\"run\",\"rank\":0,\"world_size\":1}\n[cfg] world_size=1\n",
                           LogFormat::kBigmac);
  EXPECT_EQ(bigmac.all<SettingsRecord>().size(), 1u);
  EXPECT_EQ(bigmac.stats.records, 2);

  auto bad = parse_text("[cfg] pp=x\n", LogFormat::kTorchtitan);
  EXPECT_EQ(bad.stats.unparseable, 1);
}

TEST(SettingsLine, TheRankKeepsTheLastOne) {
  LoadedLogs logs = load_text("[cfg] pp=1\n[cfg] pp=2\n", "mem", LogFormat::kAuto, 3);
  ASSERT_EQ(logs.ranks.size(), 1u);
  ASSERT_NE(logs.ranks[0].last_settings(), nullptr);
  EXPECT_EQ(logs.ranks[0].last_settings()->pp, 2);
  EXPECT_EQ(logs.ranks[0].settings.size(), 2u);
  EXPECT_EQ(event_name(Record(*logs.ranks[0].last_settings())), "cfg");
}

}  // namespace
}  // namespace bigmac::logs
