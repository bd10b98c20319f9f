#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::parse_text;

constexpr std::string_view kStep =
    R"({"ev":"step","rank":0,"t":1.5,"global_step":3,"loss":2.5,"grad_norm":0.5,"lr":0.001,"samples_per_step":8,"step_ms":12.5})";

TEST(BadInput, TruncatedJsonIsCounted) {
  std::string line(kStep);
  for (std::size_t cut = 8; cut < line.size() - 1; cut += 7) {
    auto parsed = parse_text(line.substr(0, cut));
    EXPECT_EQ(parsed.stats.records, 0) << cut;
    EXPECT_EQ(parsed.stats.unparseable, 1) << line.substr(0, cut);
  }
}

TEST(BadInput, TrailingGarbageAfterTheObject) {
  auto parsed = parse_text(std::string(kStep) + " trailing");
  EXPECT_EQ(parsed.stats.unparseable, 1);
}

TEST(BadInput, JsonWithoutEvIsContext) {
  auto parsed = parse_text("{\"level\":\"info\",\"msg\":\"hello\"}\n{not json\n");
  EXPECT_EQ(parsed.stats.unparseable, 0);
  EXPECT_EQ(parsed.stats.context_lines, 2);
}

TEST(BadInput, NonUtf8BytesAreKeptAsContextAndDoNotBreakRecords) {
  std::string log = "\xff\xfe\x80 bad bytes\n" + std::string(kStep) + "\n" +
                    R"({"ev":"ckpt","path":"\xc3\x28"})" + "\n";
  auto parsed = parse_text(log);
  EXPECT_EQ(parsed.all<StepRecord>().size(), 1u);
  EXPECT_EQ(parsed.stats.context_lines, 1);
  // simdjson validates UTF-8: the invalid string makes the line unparseable, not a crash.
  EXPECT_EQ(parsed.stats.unparseable, 1);
}

// Issue 30 item 10: Python's json reads 1e999 as inf; the line was unparseable here.
TEST(BadInput, NumbersPastTheDoubleRangeAreInfiniteAndBelowItZero) {
  auto parsed = parse_text(
      "{\"ev\":\"step\",\"global_step\":0,\"loss\":1e999,\"grad_norm\":-1e400,\"lr\":1e-999}\n");
  EXPECT_EQ(parsed.stats.unparseable, 0);
  const auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(*steps[0].loss, INFINITY);
  EXPECT_EQ(*steps[0].grad_norm, -INFINITY);
  EXPECT_EQ(*steps[0].lr, 0.0);
}

// Issue 30 item 18: a byte-order mark turned the first line's `run` event into context.
TEST(BadInput, AByteOrderMarkIsNoPartOfTheFirstLine) {
  auto parsed = parse_text("\xEF\xBB\xBF" + std::string(kStep) + "\n" + std::string(kStep) + "\n");
  EXPECT_EQ(parsed.all<StepRecord>().size(), 2u);
  EXPECT_EQ(parsed.stats.context_lines, 0);
}

TEST(BadInput, HugeLineIsNotBufferedAndLaterLinesStillRead) {
  StreamLimits limits;
  limits.max_line_bytes = 4096;
  LogStream stream(LogFormat::kAuto, -1, nullptr, limits);
  std::vector<Record> out;
  std::string chunk(1000, 'x');
  stream.feed("{\"ev\":\"step\",\"global_step\":1,\"loss\":\"", out);
  for (int i = 0; i < 100; ++i) stream.feed(chunk, out);  // 100 kB on one line, in pieces
  stream.feed("\"}\nplain\n", out);
  stream.feed(std::string(10000, 'y') + "\n", out);  // one big line in one piece
  stream.feed(std::string(kStep) + "\n", out);
  stream.finish(out);
  const StreamStats& stats = stream.stats();
  EXPECT_EQ(stats.oversized_lines, 2);
  EXPECT_EQ(stats.unparseable, 1);  // the record-looking huge line
  EXPECT_EQ(stats.records, 1);
  EXPECT_EQ(stats.lines, 4);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<TextLine>(out[0]).text, "plain");
  EXPECT_TRUE(std::get<TextLine>(out[1]).truncated);
  EXPECT_LE(std::get<TextLine>(out[1]).text.size(), limits.max_text_bytes);
  EXPECT_EQ(std::get<StepRecord>(out[2]).at.line, 4);
}

TEST(BadInput, HundredMegabyteLineInChunks) {
  LogStream stream;
  std::vector<Record> out;
  std::string chunk(1 << 20, 'z');
  for (int i = 0; i < 100; ++i) stream.feed(chunk, out);
  stream.feed("\n" + std::string(kStep) + "\n", out);
  stream.finish(out);
  EXPECT_EQ(stream.stats().oversized_lines, 1);
  EXPECT_EQ(stream.stats().records, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::get<TextLine>(out[0]).truncated);
}

TEST(BadInput, BinaryGarbageNeverCrashes) {
  std::mt19937 rng(1234);
  std::string garbage(1 << 16, '\0');
  for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
  std::string log = garbage + "\n" + std::string(kStep) + "\n" + garbage;
  auto parsed = parse_text(log);
  EXPECT_GE(parsed.stats.records, 1);
  EXPECT_GT(parsed.stats.lines, 2);
}

TEST(BadInput, EmptyAndBlankLines) {
  auto parsed = parse_text("\n\r\n   \n[rank0]:\n");
  EXPECT_EQ(parsed.stats.lines, 4);
  EXPECT_EQ(parsed.stats.blank_lines, 4);
  EXPECT_TRUE(parsed.records.empty());
  EXPECT_TRUE(parse_text("").records.empty());
}

TEST(Incremental, EverySplitPointOfEveryFormatGivesTheSameRecords) {
  const std::string log = std::string("[rank1]: ") + std::string(kStep) + "\r\n" +
                          "BIGMAC ev=step rank=0 global_step=4 loss=NaN\n"
                          "Traceback (most recent call last):\n" +
                          R"({"ev":"step","global_step":5,"loss":Infinity})" + "\n" +
                          "{\"ev\":\"step\",\"global_step\":6}";  // no final newline
  auto whole = parse_text(log);
  ASSERT_EQ(whole.all<StepRecord>().size(), 4u);
  for (std::size_t split = 0; split <= log.size(); ++split) {
    LogStream stream;
    std::vector<Record> out;
    stream.feed(std::string_view(log).substr(0, split), out);
    stream.feed(std::string_view(log).substr(split), out);
    stream.finish(out);
    ASSERT_EQ(out.size(), whole.records.size()) << "split at " << split;
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].index(), whole.records[i].index()) << split;
      EXPECT_EQ(origin_of(out[i]).line, origin_of(whole.records[i]).line) << split;
      EXPECT_EQ(origin_of(out[i]).rank, origin_of(whole.records[i]).rank) << split;
    }
    EXPECT_EQ(stream.stats().unparseable, 0) << split;
  }
}

TEST(Incremental, ByteByByte) {
  std::string log = std::string(kStep) + "\n" + std::string(kStep) + "\n";
  LogStream stream;
  std::vector<Record> out;
  for (char c : log) stream.feed(std::string_view(&c, 1), out);
  EXPECT_EQ(out.size(), 2u);
  stream.finish(out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(*std::get<StepRecord>(out[1]).step_ms, 12.5);
}

}  // namespace
}  // namespace bigmac::logs
