#include <gtest/gtest.h>

#include <cmath>

#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::parse_text;

constexpr std::string_view kRun =
    R"({"ev":"run","rank":0,"t":1764412800.1,"world_size":2,"local_rank":0,"device":"cpu",)"
    R"("backend":"gloo","dtype":"float32","seed":1234,"torch_version":"1.13.1","pid":4242,)"
    R"("tool_version":"0.1.0"})";

TEST(ContractJson, ReadsEveryEvent) {
  std::string log =
      std::string(kRun) + "\n" +
      R"({"ev":"pg_ready","rank":0,"t":1.5,"init_ms":12.5,"world_size":2,"backend":"gloo"})"
      "\n"
      R"({"ev":"batch","rank":0,"t":2,"micro_batch_size":2,"grad_accum":4,"dp":1,"samples_per_step":8,"seq_length":32,"input_shape":[2,32],"input_dtype":"int64"})"
      "\n"
      R"({"ev":"model","rank":0,"t":2,"param_count":1000,"param_digest":"ab12"})"
      "\n"
      R"({"ev":"layout","rank":1,"t":2,"stage":1,"num_stages":2,"first_layer":2,"last_layer":3,"dp_rank":0,"dp_size":1,"param_count":500,"tied":["embed.weight"],"tied_duplicate_count":1})"
      "\n"
      R"({"ev":"step","rank":1,"t":3,"global_step":0,"loss":4.17,"grad_norm":1.93,"lr":0.0006,"samples_per_step":8,"step_ms":14.2})"
      "\n"
      R"({"ev":"heartbeat","rank":0,"t":3,"global_step":0})"
      "\n"
      R"({"ev":"mb","rank":0,"t":3,"global_step":0,"stage":0,"mb":1,"phase":"B","start":1.25,"end":1.5})"
      "\n"
      R"({"ev":"shape","rank":0,"t":3,"global_step":0,"stage":0,"mb":1,"where":"send","name":"hidden_states","shape":[2,32,64],"dtype":"float32","device":"cpu"})"
      "\n"
      R"({"ev":"loss","rank":1,"t":3,"global_step":0,"stage":1,"mb":1,"value":4.5})"
      "\n"
      R"({"ev":"ckpt","rank":0,"t":4,"step":10,"path":"/tmp/ck pt"})"
      "\n"
      R"({"ev":"digest","rank":0,"t":5,"param_digest":"ff00","global_step":9})"
      "\n"
      R"({"ev":"done","rank":0,"t":6,"steps":10})"
      "\n";
  auto parsed = parse_text(log);
  ASSERT_EQ(parsed.records.size(), 13u);
  EXPECT_EQ(parsed.stats.records, 13);
  EXPECT_EQ(parsed.stats.unparseable, 0);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kBigmac);

  auto run = std::get<RunRecord>(parsed.records[0]);
  EXPECT_EQ(run.at.rank, 0);
  EXPECT_EQ(run.at.line, 1);
  EXPECT_DOUBLE_EQ(run.at.t, 1764412800.1);
  EXPECT_EQ(run.world_size, 2);
  EXPECT_EQ(run.device, "cpu");
  EXPECT_EQ(run.backend, "gloo");
  EXPECT_EQ(run.seed, 1234);
  EXPECT_EQ(run.torch_version, "1.13.1");
  EXPECT_EQ(run.pid, 4242);
  EXPECT_EQ(run.tool_version, "0.1.0");

  EXPECT_DOUBLE_EQ(std::get<PgReadyRecord>(parsed.records[1]).init_ms, 12.5);
  auto batch = std::get<BatchRecord>(parsed.records[2]);
  EXPECT_EQ(batch.grad_accum, 4);
  EXPECT_EQ(batch.input_shape, (std::vector<std::int64_t>{2, 32}));
  EXPECT_EQ(batch.input_dtype, "int64");
  EXPECT_EQ(std::get<ModelRecord>(parsed.records[3]).param_digest, "ab12");
  auto layout = std::get<LayoutRecord>(parsed.records[4]);
  EXPECT_EQ(layout.at.rank, 1);
  EXPECT_EQ(layout.last_layer, 3);
  EXPECT_EQ(layout.tied, (std::vector<std::string>{"embed.weight"}));
  EXPECT_EQ(layout.tied_duplicate_count, 1);
  auto step = std::get<StepRecord>(parsed.records[5]);
  EXPECT_EQ(step.global_step, 0);
  EXPECT_DOUBLE_EQ(*step.loss, 4.17);
  EXPECT_DOUBLE_EQ(*step.grad_norm, 1.93);
  EXPECT_DOUBLE_EQ(*step.lr, 0.0006);
  EXPECT_EQ(*step.samples_per_step, 8);
  EXPECT_DOUBLE_EQ(*step.step_ms, 14.2);
  EXPECT_EQ(std::get<HeartbeatRecord>(parsed.records[6]).global_step, 0);
  auto mb = std::get<MicroBatchRecord>(parsed.records[7]);
  EXPECT_EQ(mb.phase, 'B');
  EXPECT_EQ(mb.mb, 1);
  EXPECT_DOUBLE_EQ(mb.end, 1.5);
  auto shape = std::get<ShapeRecord>(parsed.records[8]);
  EXPECT_EQ(shape.where, "send");
  EXPECT_EQ(shape.shape, (std::vector<std::int64_t>{2, 32, 64}));
  EXPECT_DOUBLE_EQ(std::get<LossRecord>(parsed.records[9]).value, 4.5);
  EXPECT_EQ(std::get<CheckpointRecord>(parsed.records[10]).path, "/tmp/ck pt");
  EXPECT_EQ(std::get<DigestRecord>(parsed.records[11]).global_step, 9);
  EXPECT_EQ(std::get<DoneRecord>(parsed.records[12]).steps, 10);
}

TEST(ContractJson, IgnoresUnknownFieldsAndKeepsUnknownEventsAsContext) {
  auto parsed =
      parse_text(R"({"ev":"step","rank":0,"global_step":3,"new_field":{"a":[1,2]},"loss":1.5})"
                 "\n"
                 R"({"ev":"future_event","rank":0})"
                 "\n");
  ASSERT_EQ(parsed.all<StepRecord>().size(), 1u);
  EXPECT_DOUBLE_EQ(*parsed.all<StepRecord>()[0].loss, 1.5);
  EXPECT_EQ(parsed.stats.unknown_events, 1);
  EXPECT_EQ(parsed.all<TextLine>().size(), 1u);
  EXPECT_EQ(parsed.stats.unparseable, 0);
}

TEST(ContractJson, StepWithoutOptionalFieldsLeavesThemEmpty) {
  auto step = parse_text(R"({"ev":"step","global_step":7})").all<StepRecord>();
  ASSERT_EQ(step.size(), 1u);
  EXPECT_FALSE(step[0].loss.has_value());
  EXPECT_FALSE(step[0].lr.has_value());
  EXPECT_EQ(step[0].at.rank, -1);
}

// `sample_hashes`: 16 hex digits a sample, on the probe's step and a trainer's digest alike; a
// list of another shape is left out whole, never half read.
TEST(ContractJson, SampleHashesAreReadWholeOrNotAtAll) {
  const auto parsed = parse_text(
      R"({"ev":"step","global_step":0,"sample_count":2,"sample_digest":"3",)"
      R"("sample_hashes":"0000000000000001ffffffffffffffff"})"
      "\n"
      R"({"ev":"digest","global_step":0,"sample_count":1,"sample_hashes":"00000000000000aa"})"
      "\n"
      R"({"ev":"step","global_step":1,"sample_count":1,"sample_hashes":"00000000000000a"})"
      "\n"
      R"({"ev":"step","global_step":2,"sample_count":1,"sample_hashes":"000000000000000g"})");
  const auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].sample_hashes, (std::vector<std::uint64_t>{1, ~std::uint64_t{0}}));
  EXPECT_TRUE(steps[1].sample_hashes.empty()) << "15 digits: not a list of hashes";
  EXPECT_TRUE(steps[2].sample_hashes.empty()) << "not hex";
  ASSERT_EQ(parsed.all<DigestRecord>().size(), 1u);
  EXPECT_EQ(parsed.all<DigestRecord>()[0].sample_hashes, std::vector<std::uint64_t>{0xaa});
}

TEST(ContractJson, NonFiniteSpellings) {
  const char* spellings[] = {"NaN",  "nan",     "Infinity", "-Infinity", "inf",
                             "-inf", "\"nan\"", "\"-inf\"", "\"INF\"",   "\"Infinity\""};
  for (const char* spelling : spellings) {
    std::string line = std::string(R"({"ev":"step","rank":0,"global_step":1,"loss":)") + spelling +
                       R"(,"grad_norm":2.5})";
    auto steps = parse_text(line).all<StepRecord>();
    ASSERT_EQ(steps.size(), 1u) << spelling;
    ASSERT_TRUE(steps[0].loss.has_value()) << spelling;
    EXPECT_FALSE(std::isfinite(*steps[0].loss)) << spelling;
    EXPECT_DOUBLE_EQ(*steps[0].grad_norm, 2.5) << spelling;
  }
  auto neg = parse_text(R"({"ev":"step","global_step":1,"loss":-Infinity})").all<StepRecord>();
  ASSERT_EQ(neg.size(), 1u);
  EXPECT_LT(*neg[0].loss, 0);
}

TEST(ContractJson, NonFiniteWordInsideAStringIsLeftAlone) {
  auto ckpt = parse_text(R"({"ev":"ckpt","step":NaN,"path":"nan inf"})");
  // `step` must be an integer, so the quoted NaN fails the type check and the line is counted.
  EXPECT_EQ(ckpt.stats.unparseable, 1);
  auto run = parse_text(R"({"ev":"run","device":"Infinity","seed":1,"loss":NaN})").all<RunRecord>();
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].device, "Infinity");
}

TEST(ContractKeyValue, ReadsTheSameEvents) {
  auto parsed = parse_text(
      "BIGMAC ev=step rank=0 global_step=3 loss=2.31 grad_norm=0.82 lr=0.0006 "
      "samples_per_step=8 step_ms=12.5\n"
      "BIGMAC ev=batch rank=1 input_shape=[2,32] input_dtype=int64 grad_accum=4\n"
      "BIGMAC ev=ckpt rank=0 step=4 path=\"/tmp/a \\\"b\\\"\"\n"
      "INFO trainer: BIGMAC ev=layout rank=2 tied=[embed.weight,head.weight] stage=1\n"
      "BIGMAC ev=step rank=0 global_step=4 loss=nan\n");
  EXPECT_EQ(parsed.stats.unparseable, 0);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kKeyValue);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 3);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 2.31);
  EXPECT_EQ(*steps[0].samples_per_step, 8);
  EXPECT_TRUE(std::isnan(*steps[1].loss));
  auto batch = parsed.all<BatchRecord>();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].at.rank, 1);
  EXPECT_EQ(batch[0].input_shape, (std::vector<std::int64_t>{2, 32}));
  EXPECT_EQ(parsed.all<CheckpointRecord>()[0].path, "/tmp/a \"b\"");
  auto layout = parsed.all<LayoutRecord>();
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0].tied, (std::vector<std::string>{"embed.weight", "head.weight"}));
}

TEST(ContractKeyValue, BadLinesAreCountedWithTheirReason) {
  auto parsed = parse_text(
      "BIGMAC ev=step rank=0 global_step=three\n"
      "BIGMAC ev=step rank=0 loss=1\n"
      "BIGMAC ev=ckpt path=\"unclosed\n"
      "BIGMAC ev=step rank=0 global_step=1 loss\n");
  EXPECT_EQ(parsed.stats.unparseable, 4);
  EXPECT_TRUE(parsed.all<StepRecord>().empty());
  ASSERT_EQ(parsed.stats.unparseable_examples.size(), 4u);
  EXPECT_EQ(parsed.stats.unparseable_examples[0].line, 1);
  EXPECT_NE(parsed.stats.unparseable_examples[0].reason.find("global_step"), std::string::npos);
  EXPECT_NE(parsed.stats.unparseable_examples[1].reason.find("missing field global_step"),
            std::string::npos);
  EXPECT_NE(parsed.stats.unparseable_examples[2].reason.find("unclosed quote"), std::string::npos);
}

TEST(ContractJson, WrongTypesAreCountedNamingTheField) {
  auto parsed = parse_text(R"({"ev":"step","global_step":"3","loss":1})"
                           "\n"
                           R"({"ev":"step","global_step":3,"loss":[1]})"
                           "\n"
                           R"({"ev":"run","world_size":2.5})"
                           "\n"
                           R"({"ev":"batch","input_shape":["a"]})"
                           "\n"
                           R"({"ev":"mb","phase":"X"})"
                           "\n"
                           R"({"ev":3})"
                           "\n"
                           R"({"ev":"layout","stage":99999999999})"
                           "\n");
  EXPECT_EQ(parsed.stats.unparseable, 7);
  EXPECT_EQ(parsed.stats.records, 0);
  EXPECT_NE(parsed.stats.unparseable_examples[1].reason.find("field loss"), std::string::npos);
}

TEST(ContractJson, AWholeRealBeyondAnIntegersRangeIsAWrongType) {
  // Found by the fuzzer: 3.9e123 was cast to an integer before its range was tested.
  auto parsed = parse_text(R"({"ev":"step","global_step":3.9e123,"loss":1})"
                           "\n"
                           R"({"ev":"step","global_step":-1e300,"loss":1})"
                           "\n"
                           R"({"ev":"step","global_step":7.0,"loss":1})"
                           "\n");
  EXPECT_EQ(parsed.stats.unparseable, 2);
  ASSERT_EQ(parsed.all<StepRecord>().size(), 1u);
  EXPECT_EQ(parsed.all<StepRecord>()[0].global_step, 7);
  EXPECT_NE(parsed.stats.unparseable_examples[0].reason.find("global_step"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::logs
