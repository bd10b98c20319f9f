#include "gates/gate_catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "baseline/baseline.h"
#include "core/atomic_file.h"
#include "gates/gate_applicability.h"

namespace bigmac::gates {
namespace {

const std::string kStages = std::string(BIGMAC_SOURCE_DIR) + "/stages";

config::Config config_with(std::vector<std::string> sets) {
  config::ConfigSources sources;
  sources.overrides = std::move(sets);
  auto c = config::load_config(sources);
  EXPECT_TRUE(c);
  return c ? *c : config::Config{};
}

TEST(GateCatalog, OverridesFromTheConfigReachThePlan) {
  auto catalog =
      GateCatalog::load(kStages, config_with({"gates.dp.nproc=2", "gates.dp.loss_rel_tol=0.001"}));
  ASSERT_TRUE(catalog) << catalog.error().front().format();
  EXPECT_EQ(catalog->ids(), (std::vector<std::string>{"single", "dp", "pp2", "shapes", "target"}));
  const GateSpec* dp = catalog->find("2");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->launch.nproc, 2);
  auto plan = plan_gate(*dp, config_with({}));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->config.train.gradient_accumulation_steps, 2);  // 8 = 2 × 2 × 2
  EXPECT_DOUBLE_EQ(comparison_policy(*dp).loss->rel_tol, 1e-3);
  EXPECT_EQ(comparison_policy(*dp).loss->policy, baseline::Policy::kRelative);
}

TEST(GateCatalog, UnknownOverrideKeySuggestsTheGateFilesKey) {
  auto catalog = GateCatalog::load(kStages, config_with({"gates.dp.nprocs=2"}));
  ASSERT_FALSE(catalog);
  const Error& e = catalog.error().front();
  EXPECT_EQ(e.key, "gates.dp.nprocs");
  EXPECT_NE(e.message.find("02-dp.toml"), std::string::npos) << e.message;
  EXPECT_EQ(e.hint, "did you mean 'nproc'?");
  EXPECT_TRUE(e.file.empty());
  EXPECT_NE(e.message.find("(set by --set gates.dp.nprocs=2)"), std::string::npos) << e.message;
}

// The gate files are the one list of gate ids: an override of any other gate is refused.
TEST(GateCatalog, AnOverrideOfAGateNoGateFileDefinesIsRefusedWithTheClosestId) {
  auto catalog = GateCatalog::load(kStages, config_with({"gates.dpp.nproc=2"}));
  ASSERT_FALSE(catalog);
  const Error& e = catalog.error().front();
  EXPECT_EQ(e.key, "gates.dpp");
  EXPECT_NE(e.message.find("unknown gate 'dpp' (did you mean 'dp'?)"), std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("single, dp, pp2, shapes, target"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("(set by --set gates.dpp.nproc=2)"), std::string::npos) << e.message;
}

TEST(GateCatalog, TrainerIdentityAndInputs) {
  const auto file =
      std::filesystem::temp_directory_path() / ("bigmac-trainer-" + std::to_string(::getpid()));
  ASSERT_TRUE(write_file_atomically(file, "v1"));
  const std::string first = trainer_identity(file);
  ASSERT_TRUE(write_file_atomically(file, "v2 longer"));
  EXPECT_NE(trainer_identity(file), first);
  EXPECT_NE(trainer_identity("/nonexistent/bigmac-train").find("(missing)"), std::string::npos);
  GatePlan plan;
  plan.inputs = {{"train.seed", "1"}};
  const GateInputs in = gate_inputs(plan, file, baseline::file_digest(file));
  EXPECT_EQ(in.config, plan.inputs);
  EXPECT_EQ(in.baseline.size(), 16u);
  EXPECT_EQ(in.baseline, baseline::file_digest(file));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace bigmac::gates

namespace bigmac::gates {
namespace {

// A target layout whose every process is a pipeline stage has no replica: the dp gate does not
// apply (docs/pipelines.md); with replicas, or without stages, it does.
TEST(GateApplicability, DpDoesNotApplyWhenEveryProcessIsAStage) {
  const auto reasons = [](std::vector<std::string> sets) {
    auto catalog = GateCatalog::load(kStages, config_with(sets));
    EXPECT_TRUE(catalog);
    return catalog ? not_applicable_gates(*catalog, config_with(sets))
                   : std::map<std::string, std::string>{};
  };
  const auto pure = reasons({"launch.nproc_per_node=2", "parallel.pp_size=2"});
  ASSERT_EQ(pure.count("dp"), 1u);
  EXPECT_NE(pure.at("dp").find("its 2 processes are 2 pipeline stages × tp 1 (dp 1)"),
            std::string::npos)
      << pure.at("dp");
  EXPECT_EQ(pure.count("pp2"), 0u);
  EXPECT_EQ(reasons({"launch.nproc_per_node=4", "parallel.pp_size=2"}).count("dp"), 0u);
  const auto flat = reasons({"launch.nproc_per_node=2", "parallel.pp_size=1"});
  EXPECT_EQ(flat.count("dp"), 0u);
  EXPECT_EQ(flat.count("pp2"), 1u);
}

}  // namespace
}  // namespace bigmac::gates
