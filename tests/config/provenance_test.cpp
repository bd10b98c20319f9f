#include "config/config_printer.h"
#include "config/config_writer.h"
#include "config_fixture.h"

namespace bigmac::config {
namespace {

using ::testing::HasSubstr;

TEST_F(ConfigTest, PrecedenceIsDefaultFileEnvSet) {
  const std::string toml = "[train]\nseed = 5\n";
  EXPECT_EQ(load_ok(toml).train.seed, 5);
  EXPECT_EQ(load_ok(toml, {}, {{"BIGMAC_TRAIN_SEED", "6"}}).train.seed, 6);
  EXPECT_EQ(load_ok(toml, {"train.seed=7"}, {{"BIGMAC_TRAIN_SEED", "6"}}).train.seed, 7);
  EXPECT_EQ(load_ok("", {}, {{"BIGMAC_TRAIN_SEED", "6"}}).train.seed, 6);
}

TEST_F(ConfigTest, LastSetWins) {
  EXPECT_EQ(load_ok("", {"train.seed=1", "train.seed=2"}).train.seed, 2);
}

TEST_F(ConfigTest, EveryPlaceIsRecordedInOrder) {
  Config c = load_ok("[train]\n\nseed = 5\n", {"train.seed=7"}, {{"BIGMAC_TRAIN_SEED", "6"}});
  const Setting* seed = c.settings.find("train.seed");
  ASSERT_NE(seed, nullptr);
  ASSERT_EQ(seed->assignments.size(), 4u);
  EXPECT_EQ(seed->assignments[0].origin.kind, SourceKind::kDefault);
  EXPECT_EQ(seed->assignments[1].origin.kind, SourceKind::kFile);
  EXPECT_EQ(seed->assignments[1].origin.line, 3);
  EXPECT_EQ(seed->assignments[2].origin.where, "$BIGMAC_TRAIN_SEED");
  EXPECT_EQ(seed->assignments[3].origin.kind, SourceKind::kCommandLine);
  EXPECT_EQ(seed->origin.kind, SourceKind::kCommandLine);
}

TEST_F(ConfigTest, ProvenanceOutputListsEveryPlaceAndMarksTheWinner) {
  Config c = load_ok("[train]\nmicro_batch_size = 4\n", {"train.micro_batch_size=8"});
  std::string text = format_config(c, PrintOptions{true});
  EXPECT_THAT(text, HasSubstr("micro_batch_size = 8"));
  EXPECT_THAT(text, HasSubstr("* --set train.micro_batch_size=8"));
  EXPECT_THAT(text, HasSubstr("(wins)"));
  EXPECT_THAT(text, HasSubstr("test.toml:2:1"));
  EXPECT_THAT(text, HasSubstr("= 4"));
}

TEST_F(ConfigTest, ShowOrdersLaunchScheduleModel) {
  std::string text = format_config(load_ok(""), PrintOptions{});
  const auto launch = text.find("[launch]");
  const auto parallel = text.find("[parallel]");
  const auto train = text.find("[train]");
  const auto model = text.find("[model]");
  const auto derived = text.find("[derived]");
  EXPECT_LT(launch, parallel);
  EXPECT_LT(parallel, train);
  EXPECT_LT(train, model);
  EXPECT_LT(model, derived);
  EXPECT_THAT(text, HasSubstr("dp = 4"));
}

TEST_F(ConfigTest, JsonCarriesSources) {
  Config c = load_ok("[train]\nseed = 9\n");
  nlohmann::json j = config_to_json(c, PrintOptions{true});
  EXPECT_EQ(j["train"]["seed"]["value"], 9);
  EXPECT_THAT(j["train"]["seed"]["source"].get<std::string>(), HasSubstr("test.toml:2:1"));
  EXPECT_EQ(j["derived"]["dp"]["value"], 4);
  EXPECT_EQ(config_to_json(c, PrintOptions{})["train"]["seed"], 9);
}

TEST_F(ConfigTest, BadEnvValueNamesTheVariable) {
  Errors errors = load_errors("", {}, {{"BIGMAC_TRAIN_MAX_STEPS", "many"}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].format(), HasSubstr("$BIGMAC_TRAIN_MAX_STEPS"));
  EXPECT_THAT(errors[0].format(), HasSubstr("expected an integer"));
}

}  // namespace
}  // namespace bigmac::config

namespace bigmac::config {
namespace {

TEST_F(ConfigTest, WrittenTomlReadsBackToTheSameValues) {
  Config original = load_ok(
      "[launch]\nnproc_per_node = 2\n[parallel]\npp_size = 2\n[train]\nlr = 2\nseed = 11\n"
      "[trainer]\ncommand = [\"python3\", \"t \\\"q\\\".py\"]\n[logs.fields]\nloss = 'l=(\\d+)'\n");
  std::string text = to_toml(original, "gate dp\nattempt 1");
  EXPECT_EQ(text.rfind("# gate dp\n# attempt 1\n", 0), 0u);
  Config back = load_ok(text);
  for (const Setting& s : original.settings.entries) {
    // "auto" split points are written expanded; derived values are recomputed on reading.
    if (s.key == "model.split_points" || s.origin.kind == SourceKind::kDerived) continue;
    const Setting* read_back = back.settings.find(s.key);
    ASSERT_NE(read_back, nullptr) << s.key;
    EXPECT_EQ(value_to_string(read_back->value), value_to_string(s.value)) << s.key;
  }
  EXPECT_EQ(back.model.split_points, original.model.split_points);
  EXPECT_EQ(back.log_fields, original.log_fields);
}

TEST_F(ConfigTest, YamlHasEveryTableAndTheDerivedValues) {
  std::string yaml = to_yaml(load_ok(""), "gate single");
  EXPECT_THAT(yaml, ::testing::HasSubstr("train:\n  micro_batch_size: 2\n"));
  EXPECT_THAT(yaml, ::testing::HasSubstr("derived:\n  world_size: 4\n  dp: 4\n"));
}

}  // namespace
}  // namespace bigmac::config
