// End-to-end tests of `bigmac-bringup env`: the real binary asking the real interpreters.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/run_program.h"

namespace {

using bigmac::testing::run_program;
using ::testing::HasSubstr;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";

struct TorchPython {
  std::string name;        ///< as env names it: "python3" or "/usr/bin/python3"
  std::string version;     ///< torch.__version__
  std::string executable;  ///< sys.executable: env lists python3 once when PATH's is /usr/bin's
};

// The first of env's default interpreters that imports torch, asked directly.
std::optional<TorchPython> python_with_torch() {
  for (const std::string name : {"python3", "/usr/bin/python3"}) {
    auto r = run_program({"/usr/bin/env", name, "-c",
                          "import sys, torch; print(torch.__version__); print(sys.executable)"});
    const std::size_t nl = r.out.find('\n');
    if (r.exit_code == 0 && nl != std::string::npos) {
      std::string executable = r.out.substr(nl + 1);
      executable = executable.substr(0, executable.find('\n'));
      return TorchPython{name, r.out.substr(0, nl), executable};
    }
  }
  return std::nullopt;
}

// The version number --version prints ("bigmac-bringup 0.1.0 (commit ...)").
std::string tool_version() {
  auto r = run_program({kBinary, "--version"});
  const std::string prefix = "bigmac-bringup ";
  const std::size_t end = r.out.find_first_of(" \n", prefix.size());
  return r.out.substr(prefix.size(), end - prefix.size());
}

TEST(EnvCommand, TextNamesTheToolThePythonAndItsTorch) {
  auto r = run_program({kBinary, "env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\ntool\n"));
  EXPECT_THAT(r.out, HasSubstr("version:       " + tool_version()));
  EXPECT_THAT(r.out, HasSubstr("interpreter /usr/bin/python3 ("));
  EXPECT_THAT(r.out, HasSubstr("no trainer command names one"));
  EXPECT_THAT(r.out, HasSubstr("port 29500:"));
  EXPECT_THAT(r.out, HasSubstr("open files:"));
  const auto torch = python_with_torch();
  if (!torch) GTEST_SKIP() << "no python3 with torch on this machine";
  EXPECT_THAT(r.out, HasSubstr("torch:          " + torch->version + " at "));
  EXPECT_THAT(r.out, HasSubstr("gloo available:"));
  EXPECT_THAT(r.out, HasSubstr("probe imports:  yes"));
}

TEST(EnvCommand, JsonHoldsTheSameFacts) {
  auto r = run_program({kBinary, "env", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_THAT(j["tool"]["version"].get<std::string>(), ::testing::StartsWith(tool_version()));
  EXPECT_FALSE(j["tool"]["probe_dir"].get<std::string>().empty());
  EXPECT_EQ(j["configuration"]["file"], "");
  ASSERT_FALSE(j["interpreters"].empty());
  EXPECT_EQ(j["interpreters"].back()["name"], "/usr/bin/python3");
  EXPECT_EQ(j["network"]["ports"][0]["port"], 29500);
  EXPECT_GT(j["network"]["os_free_port"].get<int>(), 0);
  EXPECT_GT(j["host"]["cpus_online"].get<int>(), 0);
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  const auto torch = python_with_torch();
  if (!torch) GTEST_SKIP() << "no python3 with torch on this machine";
  bool seen = false;
  for (const auto& i : j["interpreters"]) {
    if (i["name"] != torch->name && i["executable"] != torch->executable) continue;
    seen = true;
    EXPECT_EQ(i["answered"], true) << i.dump();
    EXPECT_FALSE(i["python_version"].get<std::string>().empty());
    EXPECT_EQ(i["torch"]["importable"], true);
    EXPECT_EQ(i["torch"]["version"], torch->version);
    EXPECT_EQ(i["probe"]["imports"], true) << i["probe"].dump();
  }
  EXPECT_TRUE(seen) << r.out;
}

TEST(EnvCommand, MissingInterpreterIsReportedAndStillSucceeds) {
  const std::vector<std::string> sets = {
      "--set", "trainer.kind=command", "--set",
      "trainer.command=[\"/nonexistent/python3\", \"train.py\"]"};
  std::vector<std::string> text = {kBinary, "env"};
  text.insert(text.end(), sets.begin(), sets.end());
  auto r = run_program(text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("interpreter /nonexistent/python3 (the trainer command's program)"));
  EXPECT_THAT(r.out, HasSubstr("status:"));
  EXPECT_THAT(r.out, HasSubstr("not found: cannot execute '/nonexistent/python3'"));
  EXPECT_THAT(r.out, HasSubstr("--set trainer.command="));

  std::vector<std::string> json = text;
  json.push_back("--json");
  auto j = run_program(json);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["interpreters"].size(), 1u);
  EXPECT_EQ(doc["interpreters"][0]["found"], false);
  EXPECT_THAT(doc["interpreters"][0]["problem"].get<std::string>(), HasSubstr("not found"));
}

TEST(EnvCommand, AnUnreadableConfigurationIsBadInput) {
  auto r = run_program({kBinary, "env", "-c", "/nonexistent/config.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/config.toml"));
}

}  // namespace
