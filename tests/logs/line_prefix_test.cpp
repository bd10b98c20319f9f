#include "logs/line_prefix.h"

#include <gtest/gtest.h>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::parse_text;

TEST(LinePrefix, TorchrunRank) {
  auto p = strip_line_prefix("[rank3]: hello");
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.rest, "hello");
}

TEST(LinePrefix, TorchrunDefaultRole) {
  auto p = strip_line_prefix("[default12]:{\"ev\":1}");
  EXPECT_EQ(p.rank, 12);
  EXPECT_EQ(p.rest, "{\"ev\":1}");
}

TEST(LinePrefix, SrunLabelPaddedAndNestedTorchrunWins) {
  auto p = strip_line_prefix(" 7: [rank3]: x");
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.rest, "x");
  auto q = strip_line_prefix("15: y");
  EXPECT_EQ(q.rank, 15);
  EXPECT_EQ(q.rest, "y");
}

TEST(LinePrefix, IsoTimestamps) {
  auto z = strip_line_prefix("2024-05-01T12:00:00.5Z x");
  EXPECT_TRUE(z.has_time);
  EXPECT_DOUBLE_EQ(z.t, 1714564800.5);
  EXPECT_EQ(z.rest, "x");
  auto offset = strip_line_prefix("2024-05-01T14:00:00+02:00 x");
  EXPECT_DOUBLE_EQ(offset.t, 1714564800.0);
  auto comma = strip_line_prefix("2024-05-01 12:00:00,250 x");
  EXPECT_DOUBLE_EQ(comma.t, 1714564800.25);
  auto bracket = strip_line_prefix("[2024-05-01 12:00:00] x");
  EXPECT_DOUBLE_EQ(bracket.t, 1714564800.0);
  EXPECT_EQ(bracket.rest, "x");
}

TEST(LinePrefix, AnsiColourAroundPrefixes) {
  auto p = strip_line_prefix("\x1b[32m[rank1]:\x1b[0m hi");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.rest, "hi");
}

TEST(LinePrefix, LeavesOrdinaryTextAlone) {
  for (std::string_view text : {"[titan] x", "12 apples", "2024 was a year", "[rank]: x",
                                "[rank3] x", "[3]: x", "3:no space"}) {
    auto p = strip_line_prefix(text);
    EXPECT_EQ(p.rank, -1) << text;
    EXPECT_FALSE(p.has_time) << text;
    EXPECT_EQ(p.rest, text);
  }
}

TEST(LinePrefix, RemoveAnsi) {
  std::string out;
  remove_ansi("\x1b[1;31mred\x1b[0m plain \x1b(B", out);
  EXPECT_EQ(out, "red plain ");
}

// Issue 30 item 14: an OSC sequence lost only its ESC (the title and BEL stayed), and a stray
// BEL or backspace kept an error line from matching its signature.
TEST(LinePrefix, RemoveAnsiTakesStringSequencesAndControlsWhole) {
  std::string out;
  remove_ansi("out of memory.\x1b]0;title\x07 Tried", out);
  EXPECT_EQ(out, "out of memory. Tried");
  remove_ansi("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ b", out);  // a hyperlink, ST-ended
  EXPECT_EQ(out, "alink b");
  remove_ansi("bell\x07\x08 here\x7f, tab\tand cr\r stay", out);
  EXPECT_EQ(out, "bell here, tab\tand cr\r stay");
  remove_ansi(
      "c1 \xc2\x9b"
      "2Jcsi and \xc2\x9d"
      "0;t\x07osc, \xc2\xa0nbsp",
      out);
  EXPECT_EQ(out, "c1 csi and osc, \xc2\xa0nbsp");
  EXPECT_TRUE(has_escape("x\x07"));
  EXPECT_FALSE(has_escape("tab\tcr\r \xc2\xa0 ✅"));
}

TEST(StreamPrefix, RankFromPrefixWhenTheEventHasNone) {
  auto parsed = parse_text(
      "[rank2]:{\"ev\":\"heartbeat\",\"global_step\":1}\n"
      "[rank2]:{\"ev\":\"heartbeat\",\"rank\":5,\"global_step\":2}\n"
      "2: BIGMAC ev=heartbeat global_step=3\n"
      "\x1b[33m[default1]:\x1b[0m Traceback (most recent call last):\n");
  auto beats = parsed.all<HeartbeatRecord>();
  ASSERT_EQ(beats.size(), 3u);
  EXPECT_EQ(beats[0].at.rank, 2);
  EXPECT_EQ(beats[1].at.rank, 5);  // the event's own rank wins
  EXPECT_EQ(beats[2].at.rank, 2);
  auto text = parsed.all<TextLine>();
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0].at.rank, 1);
  EXPECT_EQ(text[0].text, "Traceback (most recent call last):");
  EXPECT_EQ(text[0].at.line, 4);
}

TEST(StreamPrefix, DefaultRankWhenNothingSaysOtherwise) {
  LogStream stream(LogFormat::kAuto, 6);
  std::vector<Record> out;
  stream.feed("NCCL WARN something\n", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(origin_of(out[0]).rank, 6);
}

}  // namespace
}  // namespace bigmac::logs
