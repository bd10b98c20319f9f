// Messages broken over lines and repeated by many ranks. The messages are real (their sources
// are named); the wrapping, interleaving and prefixes are applied here the way terminals,
// loggers and launchers do it, so every width and every prefix style is covered.

#include "diagnose/text_scan.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "diagnose/diagnoser.h"
#include "logs/log_stream.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;

// huggingface/accelerate#1209 (one line there); its first collective (SeqNum=1).
const std::string kWatchdog =
    "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
    "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1808212 milliseconds before timing out.";
// pytorch/pytorch#85604.
const std::string kBind =
    "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 (errno: 98 "
    "- Address already in use).";

const TextMatcher& matcher() {
  static const Catalog catalog = *builtin_catalog();
  static const TextMatcher m = *TextMatcher::build(catalog);
  return m;
}

// Reads `text` as a log file would be read, scanning its text lines.
std::vector<Diagnosis> scan_text(const std::string& text, const std::string& file = "x.log") {
  TextScan scan(matcher());
  scan.begin_file(file);
  logs::LogStream stream;
  std::vector<logs::Record> records;
  stream.feed(text, records);
  stream.finish(records);
  for (const auto& r : records) {
    if (const auto* line = std::get_if<logs::TextLine>(&r)) scan.add_line(*line);
  }
  return scan.finish();
}

const Diagnosis* find(const std::vector<Diagnosis>& all, const std::string& id) {
  for (const Diagnosis& d : all) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

// A terminal's hard wrap: every `width` characters, inside words.
std::vector<std::string> hard_wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size(); i += width) out.push_back(text.substr(i, width));
  return out;
}

// A logger's wrap (Python's textwrap): at spaces, which are dropped.
std::vector<std::string> soft_wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> out;
  std::string line;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(i, end - i);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out.push_back(line);
      line.clear();
    }
    line += line.empty() ? word : " " + word;
    i = end + 1;
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

std::string joined(const std::vector<std::string>& lines, const std::string& prefix = "") {
  std::string out;
  for (const std::string& l : lines) out += prefix + l + "\n";
  return out;
}

TEST(WrappedMessages, FoundAtEveryWidthHardOrSoft) {
  for (std::size_t width : {28u, 40u, 55u, 80u, 100u, 133u}) {
    for (bool soft : {false, true}) {
      SCOPED_TRACE(fmt::format("width {} {}", width, soft ? "soft" : "hard"));
      const auto lines = soft ? soft_wrap(kWatchdog, width) : hard_wrap(kWatchdog, width);
      ASSERT_GT(lines.size(), 1u);
      const auto all = scan_text("some output before\n" + joined(lines) + "training ends\n");
      const Diagnosis* d = find(all, "nccl_watchdog_first_collective");
      ASSERT_NE(d, nullptr);
      EXPECT_EQ(d->matches, 1);
      EXPECT_EQ(d->failed_rank, 0);
      EXPECT_THAT(d->symptom, HasSubstr("waited 1808212 ms in the first collective (ALLGATHER"));
      ASSERT_EQ(d->evidence.size(), 1u);
      EXPECT_EQ(d->evidence[0].line, 2);  // where the message starts
      EXPECT_EQ(d->evidence[0].lines, static_cast<int>(lines.size()));
    }
  }
}

TEST(WrappedMessages, FoundWhenRanksInterleaveLineByLine) {
  // Two ranks print the same wrapped message at once; torchrun's prefixes tell the lines apart.
  const auto a = hard_wrap(kBind, 50);
  std::string text;
  for (std::size_t i = 0; i < a.size(); ++i) {
    text += "[rank0]:" + a[i] + "\n";
    text += "[rank1]:" + a[i] + "\n";
  }
  const auto all = scan_text(text);
  const Diagnosis* d = find(all, "c10d_bind_eaddrinuse");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->matches, 2);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));
  EXPECT_THAT(d->symptom, HasSubstr("port 47531"));
}

TEST(WrappedMessages, NotJoinedAcrossARecord) {
  // A record between the two halves ends the message: nothing to find.
  const auto halves = hard_wrap(kBind, 60);
  ASSERT_EQ(halves.size(), 2u);
  const std::string text = halves[0] + "\n" +
                           R"({"ev":"step","global_step":0,"loss":2.5,"grad_norm":1.0})" + "\n" +
                           halves[1] + "\n";
  const auto all = scan_text(text);
  EXPECT_EQ(find(all, "c10d_bind_eaddrinuse"), nullptr);
}

TEST(WrappedMessages, RepeatedLinesCountOnceEach) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += kBind + "\n";
  const auto all = scan_text(text);
  const Diagnosis* d = find(all, "c10d_bind_eaddrinuse");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->matches, 5);
  EXPECT_EQ(d->evidence.front().lines, 1);
}

// The same failure from 256 ranks, written the ways launchers prefix lines.
std::string many_ranks() {
  std::string text;
  for (int r = 0; r < 256; ++r) {
    const std::string ts = r % 8 == 2 ? "2024-05-01 12:00:30,000 " : "";  // some lines only
    const std::string line = kWatchdog.substr(9);  // without the "[Rank 0] " the rank adds
    switch (r % 4) {
      case 0:
        text += fmt::format("{}[rank{}]:[Rank {}] {}\n", ts, r, r, line);
        break;
      case 1:
        text += fmt::format("{}[default{}]:[Rank {}] {}\n", ts, r, r, line);
        break;
      case 2:
        text += fmt::format("{}: {}[Rank {}] {}\n", r, ts, r, line);
        break;
      default:
        text += fmt::format("[1,{}]<stdout>:[Rank {}] {}\n", r, r, line);
        break;
    }
  }
  return text;
}

TEST(RankSummary, HundredsOfRanksWithDifferentPrefixesBecomeOneDiagnosis) {
  const auto all = scan_text(many_ranks());
  const Diagnosis* d = find(all, "nccl_watchdog_first_collective");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->matches, 256);
  ASSERT_EQ(d->ranks.size(), 256u);
  EXPECT_EQ(d->ranks.front(), 0);
  EXPECT_EQ(d->ranks.back(), 255);
  EXPECT_EQ(d->evidence.size(), 6u);  // bounded
  EXPECT_EQ(d->first_rank, 0);
  EXPECT_EQ(d->first_by, "log order");
}

TEST(RankSummary, FirstRankByTimestampWhenEveryLineHasOne) {
  std::string text;
  for (int r = 0; r < 64; ++r) {
    if (r == 40) continue;  // one rank never reports
    const int second = r == 17 ? 1 : 30 + r % 20;
    text += fmt::format("[rank{}]:2024-05-01 12:00:{:02},000 {}\n", r, second,
                        "[Rank " + std::to_string(r) + kWatchdog.substr(7));
  }
  const auto all = scan_text(text);
  const Diagnosis* d = find(all, "nccl_watchdog_first_collective");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->ranks.size(), 63u);
  EXPECT_EQ(d->first_rank, 17);
  EXPECT_EQ(d->first_by, "time");
  EXPECT_EQ(d->failed_rank, 17);  // the evidence is ordered by time too
  std::ostringstream printed;
  print_diagnosis(printed, *d);
  EXPECT_THAT(printed.str(),
              HasSubstr("ranks: 63 (0-39,41-63); first: rank 17 (earliest timestamp)"));
}

TEST(RankSummary, NoFirstRankAcrossFilesWithoutTimestamps) {
  TextScan scan(matcher());
  for (int r = 0; r < 3; ++r) {
    scan.begin_file(fmt::format("rank{}.log", r));
    logs::TextLine line;
    line.at = logs::RecordOrigin{r, 1, 0};
    line.text = kBind;
    scan.add_line(line);
  }
  const auto all = scan.finish();
  const Diagnosis* d = find(all, "c10d_bind_eaddrinuse");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(d->first_rank, -1);  // reading order of separate files says nothing
}

TEST(RankSummary, NodesFromNcclHostPrefixes) {
  // NVIDIA/nccl#1405 (host names as printed there).
  const std::string text =
      "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from "
      "peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
      "fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f\n";
  const auto all = scan_text(text);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().nodes, (std::vector<std::string>{"kp-ddp-worker-0"}));
}

}  // namespace
}  // namespace bigmac::diagnose
