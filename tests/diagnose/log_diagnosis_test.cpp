#include "diagnose/log_diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "diagnose/diagnoser.h"
#include "diagnose/log_reading.h"
#include "diagnose/text_scan.h"

namespace bigmac::diagnose {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kFixtures = BIGMAC_SOURCE_DIR "/tests/diagnose/fixtures/";

struct Result {
  int code;
  std::string out, err;
};

Result run(DiagnoseOptions options) {
  std::ostringstream out, err;
  const int code = run_diagnose(options, out, err);
  return {code, out.str(), err.str()};
}

TEST(DiagnoseCommand, TextReportWithEvidenceAndGate) {
  Result r = run({{kFixtures + "nccl/watchdog_after_oom"}, false, {}, {}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(
      r.out,
      HasSubstr("1. [out_of_memory] a rank ran out of GPU memory while allocating 22.78 GiB"));
  EXPECT_THAT(r.out, HasSubstr("rank 2, " + kFixtures +
                               "nccl/watchdog_after_oom/rank2.log:6: torch.OutOfMemoryError"));
  EXPECT_THAT(r.out, HasSubstr("go back to gate: single"));
  EXPECT_THAT(r.out, HasSubstr("2. [collective_timeout]"));
}

TEST(DiagnoseCommand, JsonListsAllDiagnosesBestFirst) {
  Result r = run({{kFixtures + "children/sigkill.log"}, true, {}, {}});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["files"], 1);
  ASSERT_GE(doc["diagnoses"].size(), 3u);
  EXPECT_EQ(doc["diagnoses"][0]["id"], "torchrun_signal");
  EXPECT_EQ(doc["diagnoses"][0]["gate"], "single");
  EXPECT_TRUE(doc["diagnoses"][0]["evidence"][0].contains("line"));
}

TEST(DiagnoseCommand, ExitOneWhenNothingMatches) {
  Result r = run({{kFixtures + "clean"}, false, {}, {}});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("no diagnosis"));
}

// Writes `text` into a fresh file of the test's own temporary folder.
std::string write_log(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("bigmac-diagnose-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "rank0.log";
  std::ofstream(file) << text;
  return file.string();
}

TEST(DiagnoseCommand, NoDiagnosisNamesTheLibraryMessageItRead) {
  // Gloo's uv transport (gloo/transport/uv/device.cc), a message no class explains yet.
  const std::string log =
      write_log("unclassified",
                "step 1 loss 0.5\n"
                "[enforce fail at gloo/transport/uv/device.cc:246] !event. Error on "
                "listener socket: connection reset by peer\n");
  Result r = run({{log}, false, {}, {}});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("no diagnosis"));
  EXPECT_THAT(r.out, HasSubstr(log + ":2 prints gloo's message \"!event. Error on listener "
                                     "socket: {}\" (gloo/transport/uv/device.cc"));
  EXPECT_THAT(r.out, HasSubstr("not classified"));
  Result json = run({{log}, true, {}, {}});
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["read"]["library_message"]["library"], "gloo");
  EXPECT_EQ(doc["read"]["library_message"]["line"], 2);
  EXPECT_EQ(doc["read"]["library_message"]["class"], "");
}

TEST(DiagnoseCommand, NoDiagnosisNamesTheExceptionAndWhereItWasRaised) {
  // What CPython printed for a program stopped by Ctrl-C in its loop.
  const std::string log = write_log("interrupted",
                                    "Traceback (most recent call last):\n"
                                    "  File \"/work/train.py\", line 40, in <module>\n"
                                    "    main()\n"
                                    "  File \"/work/train.py\", line 31, in main\n"
                                    "    time.sleep(1)\n"
                                    "KeyboardInterrupt\n");
  Result r = run({{log}, false, {}, {}});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("rank 0 raised KeyboardInterrupt (" + log +
                               ":6) at /work/train.py:31 in main"));
  Result json = run({{log}, true, {}, {}});
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["read"]["raised"]["type"], "KeyboardInterrupt");
  EXPECT_EQ(doc["read"]["raised"]["at"], "/work/train.py:31 in main");
}

TEST(DiagnoseCommand, ExitTwoForMissingInputOrBadCatalog) {
  Result missing = run({{kFixtures + "does-not-exist.log"}, false, {}, {}});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("does-not-exist.log"));

  const fs::path dir = fs::path(::testing::TempDir()) / "diagnose_bad_catalog";
  fs::create_directories(dir);
  const fs::path bad = dir / "diagnoses.toml";
  std::ofstream(bad)
      << "[[signature]]\nid = \"broken\"\nclass = \"x\"\ngate = \"dp\"\nsymptom = \"s\"\n"
         "cause = \"c\"\nfix = \"f\"\npatterns = ['(unclosed']\n";
  Result r = run({{kFixtures + "clean"}, false, bad.string(), {}});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("diagnoses.toml:8"));
  EXPECT_THAT(r.err, HasSubstr("entry `broken`"));
}

TEST(DiagnoseCommand, UserCatalogEntryIsUsed) {
  const fs::path dir = fs::path(::testing::TempDir()) / "diagnose_user_catalog";
  fs::create_directories(dir);
  const fs::path catalog = dir / "mine.toml";
  std::ofstream(catalog)
      << "[[signature]]\nid = \"stage_two_empty\"\nclass = \"split\"\ngate = \"pp2\"\n"
         "symptom = \"stage {stage} has no layers\"\ncause = \"c\"\nfix = \"f\"\n"
         "patterns = ['stage (?P<stage>\\d+) got no layers']\n";
  Result r = run({{kFixtures + "children/spawn.log"}, false, catalog.string(), {}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[split] stage 2 has no layers"));
}

TEST(DiagnoseCommand, DirectoriesTakeLogFilesOnly) {
  const fs::path dir = fs::path(::testing::TempDir()) / "diagnose_dir";
  fs::create_directories(dir / "attempt_0" / "3");
  std::ofstream(dir / "attempt_0" / "3" / "stderr.log")
      << "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x8)\n";
  std::ofstream(dir / "summary.json")
      << "{\"text\": \"CUDA out of memory. Tried to allocate 1.00 GiB\"}\n";
  auto files = collect_log_files({dir.string()});
  ASSERT_TRUE(files);
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ(rank_from_file_name(files->front()), 3);
  Result r = run({{dir.string()}, true, {}, {}});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["diagnoses"].size(), 1u);
  EXPECT_EQ(doc["diagnoses"][0]["id"], "matmul_shape_mismatch");
  EXPECT_EQ(doc["diagnoses"][0]["evidence"][0]["rank"], 3);
}

// D10: diagnose RUN_DIR read rank 0 of every gate attempt as one rank that logged each step
// several times ("global_step 0 is logged twice" on a passing run).
TEST(DiagnoseCommand, ARunDirectoryIsDiagnosedAttemptByAttempt) {
  const fs::path dir = fs::path(::testing::TempDir()) / "diagnose_run";
  fs::remove_all(dir);
  auto steps = [](std::ostream& out, int from, int to) {
    for (int i = from; i < to; ++i) {
      out << "{\"ev\":\"step\",\"global_step\":" << i << ",\"loss\":" << 4.0 - 0.1 * i
          << ",\"grad_norm\":1.0,\"lr\":0.001}\n";
    }
  };
  for (const char* attempt : {"01-single.1", "02-dp.1"}) {
    fs::create_directories(dir / attempt);
    std::ofstream log(dir / attempt / "rank0.log");
    steps(log, 0, 5);
  }
  std::ofstream(dir / "state.json") << "{}";
  Result passing = run({{dir.string()}, false, {}, {}});
  EXPECT_EQ(passing.code, 1) << passing.out;  // nothing found
  EXPECT_THAT(passing.out, HasSubstr("no diagnosis"));

  {
    std::ofstream log(dir / "02-dp.1" / "rank0.log", std::ios::app);
    steps(log, 4, 5);  // a real repeat inside one attempt is still found
  }
  Result repeated = run({{dir.string()}, false, {}, {}});
  EXPECT_EQ(repeated.code, 0);
  EXPECT_THAT(repeated.out, HasSubstr("global_step 4 is logged twice on rank 0"));
  EXPECT_THAT(repeated.out, HasSubstr("02-dp.1/rank0.log"));

  // Without state.json the folder is just a folder of logs, read as one set, as before.
  auto files = collect_log_files({dir.string()});
  ASSERT_TRUE(files);
  EXPECT_EQ(group_log_files({dir.string()}, *files).size(), 2u);
  fs::remove(dir / "state.json");
  EXPECT_EQ(group_log_files({dir.string()}, *files).size(), 1u);
  fs::remove_all(dir);
}

TEST(DiagnoseCommand, RankFromFileNames) {
  EXPECT_EQ(rank_from_file_name("logs/rank3.log"), 3);
  EXPECT_EQ(rank_from_file_name("logs/Rank-12.txt"), 12);
  EXPECT_EQ(rank_from_file_name("logs/rank_0.out"), 0);
  EXPECT_EQ(rank_from_file_name("run/attempt_1/5/stdout.log"), 5);
  EXPECT_EQ(rank_from_file_name("logs/train.log"), -1);
}

}  // namespace
}  // namespace bigmac::diagnose

namespace bigmac::diagnose {
namespace {

TEST(DiagnoseCommand, StreamingScanGivesTheSameDiagnosesAsKeptRecords) {
  auto catalog = builtin_catalog();
  ASSERT_TRUE(catalog);
  auto diagnoser = Diagnoser::create(std::move(*catalog));
  ASSERT_TRUE(diagnoser);
  const std::string file = kFixtures + "torch113/child_fail.log";

  auto kept = read_log_records(file);
  ASSERT_TRUE(kept);
  const std::vector<logs::RankLog>& all = *kept;
  MetricInput whole;
  whole.logs = all;
  const auto batch = diagnoser->diagnose(whole);

  TextScan scan = diagnoser->start_scan();
  auto typed = read_log_records(file, &scan);
  ASSERT_TRUE(typed);
  for (const logs::RankLog& r : *typed) EXPECT_EQ(r.context.seen(), 0);
  const std::vector<logs::RankLog>& only_typed = *typed;
  MetricInput streamed;
  streamed.logs = only_typed;
  const auto online = diagnoser->finish(scan, streamed);

  ASSERT_EQ(batch.size(), online.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(batch[i].id, online[i].id);
    EXPECT_EQ(batch[i].symptom, online[i].symptom);
    EXPECT_EQ(batch[i].evidence.size(), online[i].evidence.size());
  }
}

}  // namespace
}  // namespace bigmac::diagnose
