// End-to-end tests of the commands that read logs by hand (`parse`, `diagnose`, `compare`): with
// -c they read the logs as the configuration's trainer.log_format and [logs.fields] say.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/run_program.h"

namespace {

using bigmac::testing::run_program;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kStoredBaseline = std::string(BIGMAC_SOURCE_DIR) + "/baselines/demo-cpu.json";

// A format no built-in adapter reads: `>> 3 | L 4.4 | G 0.9 | R 0.001 | S 8`.
constexpr std::string_view kFieldsConfig =
    "[trainer]\n"
    "log_format = \"regex\"\n"
    "\n"
    "[logs.fields]\n"
    "global_step = '^>> (\\d+) '\n"
    "loss = '\\| L (\\S+)'\n"
    "grad_norm = '\\| G (\\S+)'\n"
    "lr = '\\| R (\\S+)'\n"
    "samples_per_step = '\\| S (\\d+)'\n";

class LogCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-log-commands-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(LogCommands, ParseWithAConfigurationUsesItsFormatAndFields) {
  std::string config = write("trainer.toml", kFieldsConfig);
  std::string log = write("rank0.log", ">> 0 | L 4.5 | S 8\n>> 1 | L 4.25 | S 8\nhello\n");
  auto detected = run_program({kBinary, "parse", log});
  EXPECT_EQ(detected.exit_code, 0) << detected.err;
  EXPECT_THAT(detected.out, HasSubstr("rank 0 (" + log + "): 0 steps"));
  auto configured = run_program({kBinary, "parse", log, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("regex format"));
  EXPECT_THAT(configured.out, HasSubstr("2 steps 0..1 [loss samples_per_step]"));

  auto records = run_program({kBinary, "parse", log, "-c", config, "--records"});
  EXPECT_EQ(records.exit_code, 0) << records.err;
  std::istringstream lines(records.out);
  std::string first;
  ASSERT_TRUE(std::getline(lines, first));
  auto doc = nlohmann::json::parse(first);
  EXPECT_EQ(doc["ev"], "step");
  EXPECT_EQ(doc["global_step"], 0);
  EXPECT_EQ(doc["loss"], 4.5);
  EXPECT_EQ(doc["samples_per_step"], 8);
}

TEST_F(LogCommands, ABadRegexIsAConfigErrorWithFileLineAndKey) {
  std::string config =
      write("bad.toml", "[trainer]\nlog_format = \"regex\"\n\n[logs.fields]\nloss = 'L (\\d+'\n");
  std::string log = write("rank0.log", ">> 0 | L 4.5\n");
  for (const char* command : {"parse", "diagnose"}) {
    auto r = run_program({kBinary, command, log, "-c", config});
    EXPECT_EQ(r.exit_code, 2) << command << r.out;
    EXPECT_THAT(r.err, HasSubstr(config + ":5:"));
    EXPECT_THAT(r.err, HasSubstr("logs.fields.loss"));
    EXPECT_THAT(r.err, HasSubstr("malformed regex"));
  }
}

TEST_F(LogCommands, DiagnoseWithAConfigurationSeesTheStepsItsFieldsRead) {
  std::string config = write("trainer.toml", kFieldsConfig);
  std::string log = write("rank0.log", ">> 0 | L 4.5\n>> 1 | L nan\n");
  auto detected = run_program({kBinary, "diagnose", log});
  EXPECT_EQ(detected.exit_code, 1) << detected.out << detected.err;  // no step read: nothing found
  auto configured = run_program({kBinary, "diagnose", log, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.out << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("loss_non_finite"));
}

TEST_F(LogCommands, CompareWithAConfigurationComparesWhatItsFieldsRead) {
  // The stored demo baseline, written back in the custom format value for value.
  std::ifstream in(kStoredBaseline);
  auto baseline = nlohmann::json::parse(in);
  std::string text;
  for (const auto& step : baseline["steps"]) {
    char line[256];
    std::snprintf(line, sizeof line, ">> %lld | L %.17g | G %.17g | R %.17g | S %lld\n",
                  step["global_step"].get<long long>(), step["loss"].get<double>(),
                  step["grad_norm"].get<double>(), step["lr"].get<double>(),
                  step["samples_per_step"].get<long long>());
    text += line;
  }
  std::string log = write("rank0.log", text);
  std::string config = write("trainer.toml", kFieldsConfig);
  auto detected = run_program({kBinary, "compare", log, "--baseline", kStoredBaseline});
  EXPECT_EQ(detected.exit_code, 1) << detected.out << detected.err;  // compared nothing
  auto configured =
      run_program({kBinary, "compare", log, "--baseline", kStoredBaseline, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.out << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("comparison: match"));
}

}  // namespace

// An attempt folder holds a rank's records more than once: the program's own log, its streams
// and the probe's file. `diagnose <attempt folder>` merges them as the gate did, with the layout
// and step bound of its gate.toml: a step past the gate's count (the program ran on until it was
// stopped) is not judged. The same files in a folder that is no attempt's are read as they are.
TEST_F(LogCommands, DiagnoseMergesAnAttemptFolderAsItsGateDid) {
  std::string own, probe;
  for (int step = 0; step < 4; ++step) {
    const std::string loss = step == 3 ? "NaN" : std::to_string(4.0 - 0.25 * step);
    own += R"({"ev":"step","rank":0,"global_step":)" + std::to_string(step) + R"(,"loss":)" +
           loss + "}\n";
    if (step < 3) {
      probe += R"({"ev":"step","rank":0,"global_step":)" + std::to_string(step) +
               R"(,"loss":)" + loss + R"(,"grad_norm":0.5})" + "\n";
    }
  }
  for (const char* folder : {"01-single.1", "loose"}) {
    fs::create_directories(dir_ / folder);
    write(std::string(folder) + "/rank0.log", own);
    write(std::string(folder) + "/rank0.stdout", own + "training done\n");
    write(std::string(folder) + "/probe-rank0.jsonl", probe);
  }
  write("01-single.1/gate.toml", "[train]\nmax_steps = 3\n");

  auto loose = run_program({kBinary, "diagnose", (dir_ / "loose").string()});
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  EXPECT_THAT(loose.out, HasSubstr("loss_non_finite"));

  auto attempt = run_program({kBinary, "diagnose", "--json", (dir_ / "01-single.1").string()});
  EXPECT_EQ(attempt.exit_code, 1) << attempt.out << attempt.err;
  const nlohmann::json doc = nlohmann::json::parse(attempt.out);
  EXPECT_EQ(doc["files"], 3);
  EXPECT_TRUE(doc["diagnoses"].empty()) << attempt.out;
  EXPECT_EQ(doc["read"]["steps"][0]["last_step"], 2) << attempt.out;

  // A gate.toml that cannot be read is said, with its file, never silently ignored.
  write("01-single.1/gate.toml", "[train]\nmax_steps = \"three\"\n");
  auto bad = run_program({kBinary, "diagnose", (dir_ / "01-single.1").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.err, HasSubstr("gate.toml"));
  EXPECT_THAT(bad.err, HasSubstr("the attempt's configuration cannot be read"));
}

// Nothing matched: `diagnose` says what it read and what would decide, never a cause it did
// not find.
TEST_F(LogCommands, NoDiagnosisSaysWhatWasReadAndWhatWouldDecide) {
  const std::string clean =
      write("rank0.log", R"({"ev":"step","rank":0,"global_step":0,"loss":4.0})"
                         "\n"
                         R"({"ev":"step","rank":0,"global_step":1,"loss":3.5})"
                         "\n");
  auto quiet = run_program({kBinary, "diagnose", clean});
  EXPECT_EQ(quiet.exit_code, 1) << quiet.out << quiet.err;
  EXPECT_THAT(quiet.out, HasSubstr("no diagnosis"));
  EXPECT_THAT(quiet.out, HasSubstr("read: 1 file, 0 text lines; rank 0: steps 0..1"));
  EXPECT_THAT(quiet.out, HasSubstr("no line reads as an error or a warning"));
  EXPECT_THAT(quiet.out, HasSubstr("NCCL_DEBUG=INFO"));

  const std::string odd = write("odd.log", "starting\nERROR frobnicator lost its widget\nbye\n");
  auto unknown = run_program({kBinary, "diagnose", "--json", odd});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out << unknown.err;
  const nlohmann::json doc = nlohmann::json::parse(unknown.out);
  EXPECT_TRUE(doc["diagnoses"].empty());
  EXPECT_EQ(doc["read"]["lines"], 3);
  EXPECT_EQ(doc["read"]["first_error_like"]["line"], 2);
  ASSERT_FALSE(doc["would_decide"].empty());
  EXPECT_THAT(doc["would_decide"][0].get<std::string>(),
              HasSubstr("matches no catalog entry (" + odd + ":2: ERROR frobnicator"));
}
