// gates/configuration_check: `config check` and the run commands share one validation, so what
// loads as a configuration but cannot be planned is refused by both (issue 20, D8).

#include "gates/configuration_check.h"

#include <gtest/gtest.h>

namespace bigmac::gates {
namespace {

const std::string kStages = std::string(BIGMAC_SOURCE_DIR) + "/stages";

config::Config loaded(std::vector<std::string> sets) {
  config::ConfigSources sources;
  sources.overrides = std::move(sets);
  auto c = config::load_config(sources);
  EXPECT_TRUE(c) << (c ? "" : c.error().front().format());
  return c ? *c : config::Config{};
}

TEST(ConfigurationCheck, TheDefaultsPass) {
  auto catalog = check_configuration(loaded({}), kStages);
  ASSERT_TRUE(catalog) << catalog.error().front().format();
  EXPECT_EQ(catalog->specs.size(), 5u);
}

// Each of these loaded as a configuration (the old `config check` said "valid") and was only
// refused by plan or run-all.
TEST(ConfigurationCheck, WhatOnlyTheGatesRejectedIsRejected) {
  struct Case {
    std::vector<std::string> sets;
    const char* key;
    const char* message;
  };
  const Case cases[] = {
      {{"gates.dp.los_rel_tol=1e-3"}, "gates.dp.los_rel_tol", "has no key 'los_rel_tol'"},
      {{"gates.dp.nproc=0"}, "gates.dp.nproc", "expected an integer >= 1 or \"all\", found 0"},
      {{"gates.pp2.pp=8", "parallel.pp_size=2"}, "gates.pp2", "not a multiple of pp × tp = 8 × 1"},
      {{"gates.dp.loss_rel_tol=-1"}, "gates.dp.loss_rel_tol", "must be at least 0"},
      {{"gates.dp.nproc=3"}, "gates.dp", "cannot keep 8 samples/step"},
      {{"logs.fields.loss=("}, "logs.fields.loss", "malformed regex"},
      {{"launch.nnodes=2", "launch.nproc_per_node=2"},
       "launch.nnodes",
       "starts every rank on this host, one node"},
      {{"trainer.kind=command", "trainer.command=[\"/bin/true\", \"{nosuch}\"]"},
       "trainer.command",
       "unknown placeholder {nosuch}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sets.front());
    auto catalog = check_configuration(loaded(c.sets), kStages);
    ASSERT_FALSE(catalog);
    bool found = false;
    for (const Error& e : catalog.error()) {
      found = found || (e.key == c.key && e.message.find(c.message) != std::string::npos);
    }
    EXPECT_TRUE(found) << catalog.error().front().format();
  }
}

TEST(ConfigurationCheck, EveryProblemAtOnce) {
  auto catalog = check_configuration(
      loaded({"gates.dp.nproc=0", "gates.pp2.pp=8", "logs.fields.loss=("}), kStages);
  ASSERT_FALSE(catalog);
  EXPECT_EQ(catalog.error().size(), 2u);  // the regex, and the overrides (which stop planning)
  auto plans = check_configuration(
      loaded({"gates.pp2.pp=8", "gates.target.nproc=3", "parallel.pp_size=2"}), kStages);
  ASSERT_FALSE(plans);
  EXPECT_EQ(plans.error().size(), 2u);  // both gates' plans
}

// A gate that does not apply to the target layout is never planned: a DDP-only program's
// configuration is not refused for what the pipeline gates could not split.
TEST(ConfigurationCheck, AGateThatDoesNotApplyIsNotPlanned) {
  EXPECT_FALSE(check_configuration(loaded({"gates.pp2.pp=8", "parallel.pp_size=2"}), kStages));
  EXPECT_TRUE(check_configuration(loaded({"gates.pp2.pp=8", "parallel.pp_size=1"}), kStages));
}

TEST(ConfigurationCheck, StagesDirectory) {
  EXPECT_EQ(stages_directory("/x/y"), "/x/y");
  EXPECT_FALSE(stages_directory("").empty());
}

// An install has the gate files beside the program (<prefix>/share/bigmac-bringup/stages,
// looked in first); a build tree has none there and falls back to the source tree's.
TEST(ConfigurationCheck, StagesInstalledBesideTheProgramThenTheSourceTree) {
  const auto dirs = default_stages_directories();
  ASSERT_EQ(dirs.size(), 2u);
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  EXPECT_EQ(dirs.front(),
            (self.parent_path() / ".." / "share" / "bigmac-bringup" / "stages").lexically_normal());
  EXPECT_EQ(dirs.back(), kStages);
  if (!std::filesystem::is_directory("stages") && !std::filesystem::is_directory(dirs.front())) {
    EXPECT_EQ(stages_directory(""), kStages);
  }
}

// A default place that is missing: the error names both places looked in.
TEST(ConfigurationCheck, MissingStagesNameBothPlaces) {
  const auto dirs = default_stages_directories();
  auto specs = load_gate_specs("/nonexistent/stages");
  ASSERT_FALSE(specs);
  EXPECT_NE(specs.error().front().message.find("cannot read the gate directory"),
            std::string::npos);
  if (std::filesystem::exists(dirs.front())) return;  // this test binary is installed
  auto installed = load_gate_specs(dirs.front());
  ASSERT_FALSE(installed);
  const std::string& message = installed.error().front().message;
  EXPECT_NE(message.find("the gate files are missing"), std::string::npos) << message;
  EXPECT_NE(message.find(dirs.front().string()), std::string::npos) << message;
  EXPECT_NE(message.find(dirs.back().string()), std::string::npos) << message;
}

}  // namespace
}  // namespace bigmac::gates
