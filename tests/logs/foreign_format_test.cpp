#include <gtest/gtest.h>

#include <cmath>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::extra;
using testing::parse_text;

// Laid out as Megatron-LM's training_log() prints it (format widths included).
constexpr std::string_view kMegatron =
    " [2024-05-01 12:00:07] iteration       10/     100 | consumed samples:          320 | "
    "elapsed time per iteration (ms): 1234.5 | learning rate: 1.500000E-04 | global batch "
    "size:    32 | lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 2.345 | number of "
    "skipped iterations:   0 | number of nan iterations:   0 |";

// torchtitan's metrics line with its colour codes and logger prefix.
constexpr std::string_view kTitan =
    "[titan] 2025-03-01 10:00:00,123 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  7.12340  "
    "\x1b[38;2;180;60;0mgrad_norm:  1.2345  \x1b[36mmemory: 12.34GiB(15.60%)  \x1b[34mtps: "
    "1,234  \x1b[36mtflops: 56.78  \x1b[35mmfu: 12.34%\x1b[39m";

TEST(Megatron, ReadsTheIterationLine) {
  auto parsed = parse_text(std::string("[rank3]:") + std::string(kMegatron) + "\n");
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kMegatron);
  const StepRecord& s = steps[0];
  EXPECT_EQ(s.at.rank, 3);
  EXPECT_EQ(s.global_step, 9);
  EXPECT_DOUBLE_EQ(*s.loss, 7.123456);
  EXPECT_DOUBLE_EQ(*s.lr, 1.5e-4);
  EXPECT_DOUBLE_EQ(*s.grad_norm, 2.345);
  EXPECT_DOUBLE_EQ(*s.step_ms, 1234.5);
  EXPECT_EQ(*s.samples_per_step, 32);
  EXPECT_DOUBLE_EQ(extra(s, "loss scale"), 1.0);
  EXPECT_DOUBLE_EQ(extra(s, "consumed samples"), 320);
  EXPECT_DOUBLE_EQ(extra(s, "number of nan iterations"), 0);
  EXPECT_DOUBLE_EQ(extra(s, "train_iters"), 100);
  EXPECT_GT(s.at.t, 1.7e9);  // from the bracketed timestamp
}

TEST(Megatron, NanLossAsPythonPrintsIt) {
  std::string line(kMegatron);
  line.replace(line.find("7.123456E+00"), 12, "NAN");
  auto steps = parse_text(line).all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(std::isnan(*steps[0].loss));
}

TEST(Megatron, OtherLinesAreContext) {
  auto parsed = parse_text(
      " [2024-05-01 12:00:07] ** validation after iteration 10 ** | validation loss: 1 |\n"
      "> building train, validation, and test datasets ...\n",
      LogFormat::kMegatron);
  EXPECT_EQ(parsed.stats.records, 0);
  EXPECT_EQ(parsed.stats.context_lines, 2);
}

TEST(Megatron, GarbledLossIsCounted) {
  std::string line(kMegatron);
  line.replace(line.find("7.123456E+00"), 12, "7.1.2");
  auto parsed = parse_text(line);
  EXPECT_EQ(parsed.stats.unparseable, 1);
  EXPECT_NE(parsed.stats.unparseable_examples[0].reason.find("lm loss"), std::string::npos);
}

TEST(Torchtitan, ReadsTheStepLine) {
  auto parsed = parse_text(std::string(kTitan) + "\n");
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kTorchtitan);
  const StepRecord& s = steps[0];
  EXPECT_EQ(s.global_step, 9);
  EXPECT_DOUBLE_EQ(*s.loss, 7.1234);
  EXPECT_DOUBLE_EQ(*s.grad_norm, 1.2345);
  EXPECT_DOUBLE_EQ(extra(s, "memory_gib"), 12.34);
  EXPECT_DOUBLE_EQ(extra(s, "tps"), 1234);
  EXPECT_DOUBLE_EQ(extra(s, "tflops"), 56.78);
  EXPECT_DOUBLE_EQ(extra(s, "mfu"), 12.34);
  EXPECT_FALSE(s.lr.has_value());
}

TEST(Torchtitan, OlderLineWithoutGradNormAndMfuNotAvailable) {
  auto steps = parse_text(
                   "step:  1  loss: 12.2500  memory:  3.10GiB(3.91%)  tps: 512  "
                   "tflops: 0.01  mfu: N/A\n")
                   .all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 12.25);
  EXPECT_FALSE(steps[0].grad_norm.has_value());
  EXPECT_DOUBLE_EQ(extra(steps[0], "mfu"), -1);
}

TEST(Torchtitan, ValidationLinesAreNotSteps) {
  auto parsed = parse_text("context: valid  step: 5  loss:  2.0000  memory: 1.00GiB(1%)\n",
                           LogFormat::kTorchtitan);
  EXPECT_EQ(parsed.stats.records, 0);
}

TEST(Auto, LocksOntoTheFirstFormatSeen) {
  // Once JSON records were seen, a Megatron-looking line is only context.
  auto parsed = parse_text(std::string(R"({"ev":"step","global_step":0,"loss":1})") + "\n" +
                           std::string(kMegatron) + "\n");
  EXPECT_EQ(parsed.stats.records, 1);
  EXPECT_EQ(parsed.stats.context_lines, 1);
}

TEST(ExplicitFormat, IgnoresOtherFormats) {
  auto parsed = parse_text(std::string(kTitan) + "\n", LogFormat::kMegatron);
  EXPECT_EQ(parsed.stats.records, 0);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kMegatron);
}

TEST(CustomRegex, ReadsMappedFields) {
  auto map = FieldMap::compile({{"step", R"(it (\d+):)"},
                                {"loss", R"(loss=([-+0-9.eEnaNif]+))"},
                                {"lr", R"(lr ([0-9.e-]+))"}});
  ASSERT_TRUE(map.has_value()) << map.error().format();
  auto parsed = parse_text("it 1: loss=3.5 lr 0.1\nit 2: loss=nan\nhello\nit 3: loss=e\n",
                           LogFormat::kRegex, &*map);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 3.5);
  EXPECT_DOUBLE_EQ(*steps[0].lr, 0.1);
  EXPECT_TRUE(std::isnan(*steps[1].loss));
  EXPECT_FALSE(steps[1].lr.has_value());
  EXPECT_EQ(parsed.stats.context_lines, 1);
  EXPECT_EQ(parsed.stats.unparseable, 1);
}

TEST(CustomRegex, WithoutAStepFieldStepsAreCounted) {
  auto map = FieldMap::compile({{"loss", R"(loss (\S+))"}});
  ASSERT_TRUE(map.has_value());
  auto steps = parse_text("loss 1\nloss 2\n", LogFormat::kRegex, &*map).all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].global_step, 1);
}

TEST(CustomRegex, MalformedRegexNamesTheField) {
  auto map = FieldMap::compile({{"loss", "loss=(\\d+"}});
  ASSERT_FALSE(map.has_value());
  EXPECT_EQ(map.error().key, "logs.fields.loss");
  EXPECT_EQ(map.error().kind, ErrorKind::kConfig);
  auto two = FieldMap::compile({{"lr", "(a)(b)"}});
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().message.find("2 capture groups"), std::string::npos);
  auto typo = FieldMap::compile({{"los", "(a)"}});
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().hint.find("loss"), std::string::npos);
}

TEST(FormatName, RoundTrips) {
  for (auto f : {LogFormat::kAuto, LogFormat::kBigmac, LogFormat::kKeyValue, LogFormat::kMegatron,
                 LogFormat::kTorchtitan, LogFormat::kRegex}) {
    EXPECT_EQ(*parse_format_name(format_name(f)), f);
  }
  EXPECT_FALSE(parse_format_name("json").has_value());
}

}  // namespace
}  // namespace bigmac::logs
