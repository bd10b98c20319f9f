// `auto` tries the exact formats before the general ones (Python dicts, plain step lines); these
// tests hold it to never reading a bigmac, Megatron or torchtitan log differently than before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "logs/rank_log.h"
#include "logs/record_json.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

namespace fs = std::filesystem;
using testing::parse_text;

// Every record as its JSON line: two streams read alike when these are equal.
std::vector<std::string> record_lines(const std::vector<Record>& records) {
  std::vector<std::string> lines;
  for (const Record& r : records) {
    if (!std::holds_alternative<TextLine>(r)) lines.push_back(record_json_line(r, ""));
  }
  return lines;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool general_format(LogFormat format) {
  return format == LogFormat::kPythonDict || format == LogFormat::kPlain;
}

// Every log kept as test data in this repository: bigmac runs (report and gate fixtures) and
// real PyTorch, NCCL and Gloo failures (diagnose fixtures).
TEST(FormatDetection, EveryFixtureLogReadsAsUnderItsOwnFormat) {
  int files = 0;
  int with_records = 0;
  for (const char* dir :
       {"tests/report/fixtures", "tests/gates/fixtures", "tests/diagnose/fixtures"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(BIGMAC_SOURCE_DIR) / dir)) {
      if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
      std::string text = read_file(entry.path());
      auto detected = parse_text(text);
      SCOPED_TRACE(entry.path().string());
      EXPECT_FALSE(general_format(detected.stats.detected)) << format_name(detected.stats.detected);
      ++files;
      if (detected.stats.detected == LogFormat::kAuto) {
        EXPECT_TRUE(record_lines(detected.records).empty());
        continue;
      }
      ++with_records;
      auto explicit_format = parse_text(text, detected.stats.detected);
      EXPECT_EQ(record_lines(detected.records), record_lines(explicit_format.records));
      EXPECT_EQ(detected.stats.unparseable, explicit_format.stats.unparseable);
    }
  }
  EXPECT_GT(files, 50);
  EXPECT_GT(with_records, 20);
}

// A Megatron-LM log from its start: argument dump, dataset building, the iteration lines and
// an evaluation (layout of megatron/training/training.py's training_log and evaluate_and_print).
constexpr std::string_view kMegatronLog =
    "using world size: 8, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel "
    "size: 2, pipeline-model-parallel size: 2\n"
    "setting number of micro-batches to constant 4\n"
    "> building train, validation, and test datasets ...\n"
    "[before the start of training step] datetime: 2024-05-01 12:00:00\n"
    " [2024-05-01 12:00:07] iteration        1/     100 | consumed samples:           32 | "
    "elapsed time per iteration (ms): 1234.5 | learning rate: 1.500000E-04 | global batch "
    "size:    32 | lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 2.345 | number of "
    "skipped iterations:   0 | number of nan iterations:   0 |\n"
    " [2024-05-01 12:00:08] iteration        2/     100 | consumed samples:           64 | "
    "elapsed time per iteration (ms): 1200.1 | learning rate: 1.500000E-04 | global batch "
    "size:    32 | lm loss: 7.0 | loss scale: 1.0 | grad norm: 2.1 | number of skipped "
    "iterations:   0 | number of nan iterations:   0 |\n"
    " validation loss at iteration 2 | lm loss value: 6.9E+00 | lm loss PPL: 9.9E+02 |\n";

// torchtitan's train.py start and metrics lines, colour codes removed.
constexpr std::string_view kTorchtitanLog =
    "[titan] 2025-03-01 10:00:00,100 - root - INFO - Training starts at step 1, with local batch "
    "size 8, global batch size 64, total steps 1000\n"
    "[titan] 2025-03-01 10:00:01,123 - root - INFO - step:  1  loss: 12.2500  memory:  3.10GiB"
    "(3.91%)  tps: 512  tflops: 0.01  mfu: 0.00%\n"
    "[titan] 2025-03-01 10:00:02,123 - root - INFO - step:  2  loss: 11.0000  memory:  3.10GiB"
    "(3.91%)  tps: 1,512  tflops: 0.02  mfu: 0.01%\n";

TEST(FormatDetection, ForeignLogsWithTheirPreambles) {
  auto megatron = parse_text(kMegatronLog);
  EXPECT_EQ(megatron.stats.detected, LogFormat::kMegatron);
  auto steps = megatron.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_EQ(steps[1].global_step, 1);
  EXPECT_EQ(megatron.stats.context_lines, 5);

  auto titan = parse_text(kTorchtitanLog);
  EXPECT_EQ(titan.stats.detected, LogFormat::kTorchtitan);
  steps = titan.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_EQ(titan.stats.context_lines, 1);
}

TEST(FormatDetection, AContractLogWithPlainLookingNoiseBeforeIt) {
  // A trainer's own print before its first event would read as a plain step line; once the
  // stream has its format, such lines are context.
  auto parsed = parse_text(
      "{\"ev\":\"run\",\"rank\":0,\"world_size\":1}\n"
      "step 3 loss 2.0\n"
      "{'loss': 2.0}\n"
      "{\"ev\":\"step\",\"rank\":0,\"global_step\":0,\"loss\":2.5}\n");
  EXPECT_EQ(parsed.stats.detected, LogFormat::kBigmac);
  EXPECT_EQ(parsed.stats.records, 2);
  EXPECT_EQ(parsed.stats.context_lines, 2);
}

TEST(FormatDetection, TheCounterRuleIsOneForEveryFormat) {
  // First counter 0: kept. torchtitan's `step: 0` (a resumed or 0-based log) is step 0 now,
  // not -1.
  auto titan = parse_text("step: 0  loss: 1.0\nstep: 1  loss: 0.9\n").all<StepRecord>();
  ASSERT_EQ(titan.size(), 2u);
  EXPECT_EQ(titan[0].global_step, 0);
  EXPECT_EQ(titan[1].global_step, 1);
  // A resumed Megatron run starting at iteration 501 is still 1-based.
  auto resumed = parse_text(" iteration      501/    1000 | lm loss: 2.0 |\n").all<StepRecord>();
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].global_step, 500);
}

TEST(FormatDetection, ConfiguredFieldsApplyUnderAuto) {
  auto map = FieldMap::compile({{"step", R"(^it (\d+))"}, {"loss", R"(loss=(\S+))"}});
  ASSERT_TRUE(map.has_value());
  auto parsed = parse_text("it 1 loss=2.5 zzz\n", LogFormat::kAuto, &*map);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kRegex);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].global_step, 0);  // the map's `step` is 1-based
  // The exact formats still come first.
  auto megatron = parse_text(std::string(kMegatronLog), LogFormat::kAuto, &*map);
  EXPECT_EQ(megatron.stats.detected, LogFormat::kMegatron);
}

}  // namespace
}  // namespace bigmac::logs

namespace bigmac::logs {
namespace {

TEST(FormatDetection, TheContractIsReadUnderEveryFormat) {
  // A trainer with step lines of its own writes run/model/done as contract lines: a named
  // foreign format reads both, and its step lines stay the only steps.
  auto map = FieldMap::compile({{"step", R"(^it (\d+))"}, {"loss", R"(loss=(\S+))"}});
  ASSERT_TRUE(map.has_value());
  const std::string text =
      "{\"ev\":\"run\",\"rank\":0,\"world_size\":1}\n"
      "BIGMAC ev=model rank=0 param_count=9 param_digest=ab12\n"
      "it 1 loss=2.5\n"
      "it 2 loss=2.0\n"
      "{\"ev\":\"done\",\"rank\":0,\"steps\":2}\n";
  auto parsed = parse_text(text, LogFormat::kRegex, &*map);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kRegex);
  EXPECT_EQ(parsed.all<RunRecord>().size(), 1u);
  ASSERT_EQ(parsed.all<ModelRecord>().size(), 1u);
  EXPECT_EQ(parsed.all<ModelRecord>()[0].param_count, 9);
  EXPECT_EQ(parsed.all<DoneRecord>().size(), 1u);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].global_step, 1);
  EXPECT_EQ(parsed.stats.unparseable, 0);

  // The same for a format chosen by name without a map; a bad contract line is reported.
  auto plain = parse_text("{\"ev\":\"run\",\"rank\":0}\nstep 0 loss 2.0\n{\"ev\":1}\n",
                          LogFormat::kPlain);
  EXPECT_EQ(plain.all<RunRecord>().size(), 1u);
  EXPECT_EQ(plain.all<StepRecord>().size(), 1u);
  EXPECT_EQ(plain.stats.unparseable, 1);
}

}  // namespace
}  // namespace bigmac::logs
