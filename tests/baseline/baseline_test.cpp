#include "baseline/baseline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace bigmac::baseline {
namespace {

std::vector<logs::Record> run_records(int steps, double nan_at = -1) {
  std::vector<logs::Record> r;
  logs::RunRecord run;
  run.at.rank = 0;
  run.world_size = 1;
  run.device = "cuda:0";
  run.backend = "none";
  run.dtype = "float32";
  run.seed = 1234;
  run.torch_version = "1.13.1";
  run.tool_version = "0.1.0";
  r.emplace_back(run);
  logs::BatchRecord batch;
  batch.input_shape = {2, 32};
  batch.input_dtype = "int64";
  r.emplace_back(batch);
  logs::ModelRecord model;
  model.param_count = 1000;
  model.param_digest = "abc";
  r.emplace_back(model);
  for (int i = 0; i < steps; ++i) {
    logs::StepRecord s;
    s.at.rank = 0;
    s.global_step = i;
    s.loss = i == nan_at ? NAN : 4.0 - 0.1 * i;
    s.grad_norm = 1.0;
    s.lr = 1e-3;
    s.samples_per_step = 8;
    r.emplace_back(s);
  }
  return r;
}

TEST(Baseline, SummaryTakesFingerprintStructureAndSteps) {
  const Baseline b = summarize_records(run_records(3), "demo", "cfg1");
  EXPECT_EQ(b.fingerprint.device, "cuda");  // kind only
  EXPECT_EQ(b.fingerprint.seed, 1234);
  EXPECT_EQ(b.fingerprint.config_digest, "cfg1");
  EXPECT_EQ(b.structure.param_count, 1000);
  EXPECT_EQ(b.structure.input_shape, (std::vector<std::int64_t>{2, 32}));
  ASSERT_EQ(b.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(*b.steps[2].loss, 3.8);
  EXPECT_EQ(b.structure.steps, 3);
}

TEST(Baseline, StepsComeFromTheFirstRankThatLogsThem) {
  auto records = run_records(2);
  logs::StepRecord other;
  other.at.rank = 3;
  other.global_step = 0;
  other.loss = 99;
  records.emplace_back(other);
  EXPECT_EQ(summarize_records(records, "x", "").steps.size(), 2u);
}

TEST(Baseline, RefusesNonFiniteAndEmpty) {
  auto bad = check_recordable(summarize_records(run_records(3, 1), "demo", ""));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("step 1 has non-finite loss"), std::string::npos);
  EXPECT_FALSE(check_recordable(summarize_records({}, "empty", "")));
  EXPECT_TRUE(check_recordable(summarize_records(run_records(3), "ok", "")));
}

TEST(Baseline, FileRoundTrip) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("bigmac-baseline-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const Baseline b = summarize_records(run_records(4), "demo", "cfg");
  ASSERT_TRUE(save_baseline(dir / "demo.json", b));
  auto back = load_baseline(dir / "demo.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(to_json(*back), to_json(b));
  EXPECT_EQ(file_digest(dir / "demo.json").size(), 16u);
  EXPECT_FALSE(save_baseline(dir / "nan.json", summarize_records(run_records(3, 0), "nan", "")));
  EXPECT_FALSE(std::filesystem::exists(dir / "nan.json"));
  std::filesystem::remove_all(dir);
}

TEST(Baseline, LoadErrorsNameFileAndKey) {
  nlohmann::json j = to_json(summarize_records(run_records(2), "demo", ""));
  j["steps"][1]["loss"] = "high";
  auto bad = baseline_from_json(j, "baselines/x.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().file, "baselines/x.json");
  EXPECT_EQ(bad.error().key, "steps[1].loss");
  EXPECT_FALSE(baseline_from_json(nlohmann::json{{"format", "other"}}, "y.json"));
  EXPECT_FALSE(load_baseline("/nonexistent/baseline.json"));
}

// Each step's sample set: summed over the ranks that read input (the first pipeline stage),
// one set per rank and step, kept through the file; a set half given is refused.
TEST(Baseline, SampleSetsAddUpOverTheReadingRanksAndRoundTrip) {
  auto records = run_records(2);
  auto digest = [](int rank, std::int64_t step, std::int64_t count, std::uint64_t sum) {
    logs::DigestRecord d;
    d.at.rank = rank;
    d.global_step = step;
    d.sample_count = count;
    d.sample_digest = sum;
    return d;
  };
  records.emplace_back(digest(0, 0, 4, 0x10));
  records.emplace_back(digest(1, 0, 4, 0x20));
  records.emplace_back(digest(1, 0, 4, 0x20));  // logged twice: counts once
  records.emplace_back(digest(2, 0, 4, 0x40));  // a later stage's activations: not samples
  logs::LayoutRecord later;
  later.at.rank = 2;
  later.stage = 1;
  records.emplace_back(later);
  const Baseline b = summarize_records(records, "demo", "");
  ASSERT_EQ(b.steps.size(), 2u);
  EXPECT_EQ(b.steps[0].sample_count, 8);
  EXPECT_EQ(b.steps[0].sample_digest, 0x30u);
  EXPECT_FALSE(b.steps[1].sample_count);
  const nlohmann::json j = to_json(b);
  EXPECT_EQ(j["steps"][0]["sample_digest"], "0000000000000030");
  EXPECT_FALSE(j["steps"][1].contains("sample_count"));
  auto back = baseline_from_json(j, "b.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(to_json(*back), j);
  nlohmann::json half = j;
  half["steps"][0].erase("sample_digest");
  auto refused = baseline_from_json(half, "b.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().key, "steps[0].sample_digest");
  nlohmann::json bad_hex = j;
  bad_hex["steps"][0]["sample_digest"] = "xyz";
  refused = baseline_from_json(bad_hex, "b.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().key, "steps[0].sample_digest");
}

// Samples read again, counted over the reading ranks from the first step while every one of
// them logged each sample's hash; kept through the file, and a count above the reads refused.
TEST(Baseline, SamplesReadAgainAreCountedWhileEveryReaderHashedThem) {
  auto records = run_records(3);
  auto digest = [](int rank, std::int64_t step, std::vector<std::uint64_t> hashes) {
    logs::DigestRecord d;
    d.at.rank = rank;
    d.global_step = step;
    d.sample_count = static_cast<std::int64_t>(hashes.size());
    std::uint64_t sum = 0;
    for (const std::uint64_t h : hashes) sum += h;
    d.sample_digest = sum;
    d.sample_hashes = std::move(hashes);
    return d;
  };
  records.emplace_back(digest(0, 0, {1, 2}));
  records.emplace_back(digest(1, 0, {3, 4}));
  records.emplace_back(digest(0, 1, {5, 3}));  // 3: rank 1's at step 0
  records.emplace_back(digest(1, 1, {6, 6}));  // 6 twice in one step
  records.emplace_back(digest(0, 2, {7, 8}));
  logs::DigestRecord unhashed = digest(1, 2, {9, 10});
  unhashed.sample_hashes.clear();  // past this rank's hash limit
  records.emplace_back(unhashed);
  const Baseline b = summarize_records(records, "demo", "");
  ASSERT_EQ(b.steps.size(), 3u);
  EXPECT_EQ(b.steps[0].sample_repeats, 0);
  EXPECT_EQ(b.steps[1].sample_repeats, 2);
  EXPECT_FALSE(b.steps[2].sample_repeats) << "a reader without hashes: unknown from here on";
  EXPECT_EQ(b.steps[2].sample_count, 4);
  const nlohmann::json j = to_json(b);
  EXPECT_EQ(j["steps"][1]["sample_repeats"], 2);
  EXPECT_FALSE(j["steps"][2].contains("sample_repeats"));
  auto back = baseline_from_json(j, "b.json");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(to_json(*back), j);
  nlohmann::json too_many = j;
  too_many["steps"][1]["sample_repeats"] = 9;  // 8 samples read by the end of step 1
  auto refused = baseline_from_json(too_many, "b.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().key, "steps[1].sample_repeats");
  EXPECT_NE(refused.error().format().find("the samples read so far (8), found 9"),
            std::string::npos)
      << refused.error().format();
}

// D14: a baseline with a step twice, out of order or below 0 compared against the wrong steps;
// D19: a malformed table was called "fingerprint: expected tables" whichever it was.
TEST(Baseline, StepsMustBeEachOnceInOrderFromZero) {
  const nlohmann::json good = to_json(summarize_records(run_records(3), "demo", ""));
  ASSERT_TRUE(baseline_from_json(good, "b.json"));
  struct Case {
    std::int64_t step1;
    const char* message;
  };
  for (const Case& c : {Case{0, "step 0 after step 0: steps must be listed once each, in order"},
                        Case{-3, "expected a step number from 0 up"}}) {
    nlohmann::json j = good;
    j["steps"][1]["global_step"] = c.step1;
    auto bad = baseline_from_json(j, "b.json");
    ASSERT_FALSE(bad) << c.step1;
    EXPECT_EQ(bad.error().key, "steps[1].global_step");
    EXPECT_NE(bad.error().message.find(c.message), std::string::npos) << bad.error().format();
  }
  nlohmann::json wrapped = good;
  wrapped["steps"][0]["global_step"] = std::numeric_limits<std::uint64_t>::max();  // was -1
  EXPECT_FALSE(baseline_from_json(wrapped, "b.json"));
  nlohmann::json empty = good;
  empty["steps"] = nlohmann::json::array();
  EXPECT_FALSE(baseline_from_json(empty, "b.json"));
  auto records = run_records(3);
  std::get<logs::StepRecord>(records.back()).global_step = 1;  // 0, 1, 1
  EXPECT_FALSE(check_recordable(summarize_records(records, "dup", "")));
}

// Issue 30 item 19: a baseline that contradicts itself, or is of another version, is refused
// with the key that says so.
TEST(Baseline, AFileThatContradictsItselfIsRefused) {
  const nlohmann::json good = to_json(summarize_records(run_records(3), "demo", ""));
  ASSERT_TRUE(baseline_from_json(good, "b.json"));
  struct Case {
    const char* what;
    nlohmann::json file;
    const char* key;
    const char* message;
  };
  nlohmann::json null_loss = good, steps_5 = good, steps_negative = good, lr_negative = good,
                 no_grad = good, version_2 = good;
  null_loss["steps"][1]["loss"] = nullptr;
  steps_5["structure"]["steps"] = 5;
  steps_negative["structure"]["steps"] = -1;
  lr_negative["steps"][2]["lr"] = -1e-3;
  no_grad["steps"][0].erase("grad_norm");
  version_2["format"] = "bigmac-baseline/2";
  for (const Case& c : {
           Case{"null loss", null_loss, "steps[1].loss", "step 1 has no loss"},
           Case{"steps 5", steps_5, "structure.steps", "says 5 steps, but 3 are listed"},
           Case{"steps -1", steps_negative, "structure.steps", "says -1 steps, but 3 are listed"},
           Case{"negative lr", lr_negative, "steps[2].lr", "must be at least 0, found -0.001"},
           Case{"no grad_norm", no_grad, "steps[0].grad_norm", "step 0 has no grad_norm"},
           Case{"version 2", version_2, "format",
                "unsupported baseline version \"bigmac-baseline/2\""},
       }) {
    auto bad = baseline_from_json(c.file, "b.json");
    ASSERT_FALSE(bad) << c.what;
    EXPECT_EQ(bad.error().key, c.key) << c.what;
    EXPECT_NE(bad.error().message.find(c.message), std::string::npos)
        << c.what << ": " << bad.error().format();
  }
}

// Issue 30 item 20: configs/megatron-style.toml passed single and then refused its baseline
// ("no param_count"), so dp failed with "no baseline". A metric the trainer never logs (lr,
// grad_norm, the model's size) leaves the later gates' comparison of it unobservable; only a
// metric logged on some steps and not others is a damaged log.
TEST(Baseline, AMetricNeverLoggedIsRecordableAndOneLoggedOnSomeStepsIsNot) {
  std::vector<logs::Record> records = run_records(3);
  std::erase_if(records,
                [](const logs::Record& r) { return std::holds_alternative<logs::ModelRecord>(r); });
  for (logs::Record& r : records) {
    if (auto* s = std::get_if<logs::StepRecord>(&r)) s->lr.reset();
  }
  Baseline b = summarize_records(records, "megatron", "");
  EXPECT_FALSE(b.structure.param_count);
  ASSERT_TRUE(check_recordable(b)) << check_recordable(b).error().format();
  auto read = baseline_from_json(to_json(b), "b.json");
  ASSERT_TRUE(read) << read.error().format();
  EXPECT_FALSE(read->steps[1].lr);

  b.steps[1].lr = 1e-3;
  auto partial = check_recordable(b);
  ASSERT_FALSE(partial);
  EXPECT_NE(partial.error().message.find("step 0 has no lr while other steps have one"),
            std::string::npos)
      << partial.error().format();
  EXPECT_EQ(partial.error().key, "lr") << "the metric to log, for the gate's advice";
}

TEST(Baseline, AMalformedTableIsNamed) {
  nlohmann::json j = to_json(summarize_records(run_records(2), "demo", ""));
  j["structure"] = 5;
  auto bad = baseline_from_json(j, "b.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().format(),
            "b.json: structure: expected an object of named values, found an integer");
  j = to_json(summarize_records(run_records(2), "demo", ""));
  j["steps"][0]["samples_per_step"] = 0;
  bad = baseline_from_json(j, "b.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().key, "steps[0].samples_per_step");
}

}  // namespace
}  // namespace bigmac::baseline
