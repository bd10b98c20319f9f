#include <gtest/gtest.h>

#include <random>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

// Lines of every kind for the JSON readers: the flat reader's shape, lines it defers to
// simdjson, NaN words, broken JSON, prefixed and non-record lines.
const char* const kLines[] = {
    R"({"ev":"step","rank":0,"global_step":1,"loss":2.5,"lr":0.1})",
    R"({"ev":"mb","rank":1,"global_step":1,"stage":1,"mb":0,"phase":"F","start":1.5,"end":2})",
    R"({"ev":"step","rank":0,"global_step":2,"loss":NaN})",
    R"({"ev":"step","rank":0,"global_step":3,"loss":1} {"ev":"step","global_step":4})",
    R"({"ev":"step","rank":0,"global_step":5,)",
    R"("loss":1})",
    R"({"level":"info","msg":"not a contract line"})",
    R"({"ev":"step","global_step":"six"})",
    R"({"ev":"shape","shape":[1,2,3],"where":"send"}   )",
    R"({"ev":"ckpt","path":"\u00e9t\u00e9","step":3})",
    "{\"ev\":\"ckpt\",\"path\":\"\xff\xfe\"}",
    "[rank3]:{\"ev\":\"heartbeat\",\"global_step\":9}",
    "Traceback (most recent call last):",
    "",
    "{",
    "{}",
    "{\"ev\":\"done\",\"steps\":3}\r",
    R"({"ev":"future","x":1})",
};

TEST(Chunking, WholeAndBytewiseFeedsAgreeOnMixedInput) {
  std::mt19937 rng(42);
  std::string log;
  for (int i = 0; i < 5000; ++i) {
    // Mostly good lines in runs, interrupted by the others.
    std::size_t pick = rng() % 4 == 0 ? rng() % std::size(kLines) : rng() % 2;
    log += kLines[pick];
    log += '\n';
  }
  // Fed whole: each line is read in place, with the rest of the buffer as readable slack.
  LogStream whole;
  std::vector<Record> a;
  whole.feed(log, a);
  whole.finish(a);
  // Fed a byte at a time: every line completes a partial buffer and has no slack.
  LogStream bytewise;
  std::vector<Record> b;
  for (char c : log) bytewise.feed(std::string_view(&c, 1), b);
  bytewise.finish(b);

  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].index(), b[i].index()) << i;
    EXPECT_EQ(origin_of(a[i]).line, origin_of(b[i]).line) << i;
    EXPECT_EQ(origin_of(a[i]).rank, origin_of(b[i]).rank) << i;
    if (auto* text = std::get_if<TextLine>(&a[i])) {
      EXPECT_EQ(text->text, std::get<TextLine>(b[i]).text) << i;
    }
  }
  const StreamStats& x = whole.stats();
  const StreamStats& y = bytewise.stats();
  EXPECT_EQ(x.lines, y.lines);
  EXPECT_EQ(x.records, y.records);
  EXPECT_EQ(x.unparseable, y.unparseable);
  EXPECT_EQ(x.unknown_events, y.unknown_events);
  EXPECT_EQ(x.context_lines, y.context_lines);
  EXPECT_EQ(x.blank_lines, y.blank_lines);
  EXPECT_GT(x.records, 1000);
  EXPECT_GT(x.unparseable, 100);
}

}  // namespace
}  // namespace bigmac::logs
