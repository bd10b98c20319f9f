// `bigmac-bringup audit` end to end: the real binary, its exit codes and output.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/run_program.h"

namespace {

using bigmac::testing::run_program;
using ::testing::HasSubstr;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kFixtures = std::string(BIGMAC_SOURCE_DIR) + "/tests/audit/fixtures";

TEST(AuditCommand, CleanProjectExitsZero) {
  auto r = run_program({kBinary, "audit", "seed001/clean"}, {}, kFixtures);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("micro_batch_size"));
  EXPECT_THAT(r.out, HasSubstr("seed001/clean/configs/pp4.yaml:7 = 2 [schedule, config file]"));
  EXPECT_THAT(r.out, HasSubstr("audit: no finding in 4 files"));
}

TEST(AuditCommand, FindingsExitOneWithFileLineAndFix) {
  auto r = run_program({kBinary, "audit", "seed001/planted"}, {}, kFixtures);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("seed001/planted/launch.sh:15: wrong-layer: --micro-batch-size = 4"));
  EXPECT_THAT(r.out, HasSubstr("    fix: "));
  EXPECT_THAT(r.out, HasSubstr("audit: 11 findings in 4 files"));
}

TEST(AuditCommand, JsonHasSettingsPlacesAndFindings) {
  auto r = run_program({kBinary, "audit", "hf/planted", "--json"}, {}, kFixtures);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["findings"].size(), 11u);
  EXPECT_EQ(doc["findings"][0]["code"], "wrong-layer");
  EXPECT_EQ(doc["findings"][0]["file"], "hf/planted/model/config.json");
  EXPECT_EQ(doc["findings"][0]["line"], 8);
  bool micro = false;
  for (const auto& s : doc["settings"]) {
    if (s["setting"] != "micro_batch_size") continue;
    micro = true;
    EXPECT_EQ(s["layer"], "schedule");
    EXPECT_EQ(s["places"][0]["file"], "hf/planted/run_clm.sbatch");
    EXPECT_EQ(s["places"][0]["value"], "16");
    EXPECT_EQ(s["places"][0]["layer"], "launch");
  }
  EXPECT_TRUE(micro);
}

TEST(AuditCommand, UnreadableInputExitsTwoNamingTheFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("bigmac-audit-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "train:\n  micro_batch_size: [2\n";
  auto r = run_program({kBinary, "audit", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr((dir / "bad.yaml").string() + ":"));
  EXPECT_THAT(r.err, HasSubstr("YAML"));
  auto missing = run_program({kBinary, "audit", (dir / "nothing-here").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("No such file or directory"));
  std::filesystem::remove_all(dir);
}

TEST(AuditCommand, NoPythonIsSaidClearly) {
  auto r = run_program({kBinary, "audit", "seed001/clean", "--python", "/nonexistent/python3"}, {},
                       kFixtures);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot read Python sources without a Python interpreter"));
  EXPECT_THAT(r.err, HasSubstr("seed001/clean/model.py"));
}

}  // namespace
