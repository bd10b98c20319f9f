#include "audit/config_entries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "audit/config_reader.h"

namespace bigmac::audit {
namespace {

std::vector<std::string> summary(const std::vector<ConfigEntry>& entries) {
  std::vector<std::string> out;
  for (const ConfigEntry& e : entries) {
    std::string keys;
    for (const std::string& k : e.keys) keys += (keys.empty() ? "" : "/") + k;
    out.push_back(keys + "=" + e.value.text + "@" + std::to_string(e.line));
  }
  return out;
}

TEST(ConfigEntries, YamlKeysValuesAndLines) {
  auto entries = yaml_entries(
      "# comment\nparallel:\n  pp_size: 4\ntrain:\n  micro_batch_size: 2  # per rank\n"
      "model:\n  split_points: [8, 16, 24]\n  layers:\n    - {id: 0}\n",
      "pp4.yaml");
  ASSERT_TRUE(entries) << entries.error().format();
  EXPECT_THAT(
      summary(*entries),
      ::testing::ElementsAre("parallel/pp_size=4@3", "train/micro_batch_size=2@5",
                             "model/split_points=[8, 16, 24]@7", "model/layers/[0]/id=0@9"));
  EXPECT_EQ((*entries)[2].value.integers, (std::vector<std::int64_t>{8, 16, 24}));
}

TEST(ConfigEntries, JsonKeysValuesAndLines) {
  auto entries = json_entries(
      "{\n  \"a\": {\"pp\": 2,\n    \"list\": [1, 2]},\n  \"s\": \"x:y\",\n  \"n\": null,\n"
      "  \"objs\": [{\"k\": 1}, {\"k\": 2}]\n}\n",
      "c.json");
  ASSERT_TRUE(entries) << entries.error().format();
  EXPECT_THAT(summary(*entries),
              ::testing::ElementsAre("a/pp=2@2", "a/list=[1, 2]@3", "s=x:y@4", "n=null@5",
                                     "objs/[0]/k=1@6", "objs/[1]/k=2@6"));
}

TEST(ConfigEntries, TomlKeysValuesAndLines) {
  auto entries = toml_entries(
      "[parallelism]\npipeline_parallel_degree = 2\n\n[training]\nseq_len = 8\n", "job.toml");
  ASSERT_TRUE(entries) << entries.error().format();
  EXPECT_THAT(summary(*entries), ::testing::ElementsAre("parallelism/pipeline_parallel_degree=2@2",
                                                        "training/seq_len=8@5"));
}

TEST(ConfigEntries, MalformedFilesNameTheFileAndLine) {
  auto yaml = yaml_entries("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  ASSERT_FALSE(yaml);
  EXPECT_EQ(yaml.error().file, "bad.yaml");
  EXPECT_GE(yaml.error().line, 2);
  auto json = json_entries("{\n  \"a\": 1,\n  \"b\": ]\n}\n", "bad.json");
  ASSERT_FALSE(json);
  EXPECT_EQ(json.error().file, "bad.json");
  EXPECT_EQ(json.error().line, 3);
  auto toml = toml_entries("[a]\nb = = 1\n", "bad.toml");
  ASSERT_FALSE(toml);
  EXPECT_EQ(toml.error().line, 2);
}

// Issue 30 item 9: 342 bytes of aliases nested 9 deep, 9 wide ran past 60 s and 7.5 GB.
TEST(ConfigEntries, AliasesThatExpandWithoutBoundAreAnErrorNamingTheFile) {
  std::string text =
      "a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n";
  std::string previous = "a";
  for (const char* name : {"b", "c", "d", "e", "f", "g", "h", "i"}) {
    text += std::string(name) + ": &" + name + " [";
    for (int i = 0; i < 9; ++i) text += (i ? ", *" : "*") + previous;
    text += "]\n";
    previous = name;
  }
  auto bomb = yaml_entries(text, "laughs.yaml");
  ASSERT_FALSE(bomb);
  EXPECT_EQ(bomb.error().file, "laughs.yaml");
  EXPECT_THAT(bomb.error().message, ::testing::HasSubstr("its aliases expand to more than"));
  // Aliases as configurations use them stay fine.
  EXPECT_TRUE(yaml_entries("base: &b {lr: 1, seed: 2}\nrun:\n  <<: *b\n  other: *b\n", "ok.yaml"));
}

TEST(ConfigReader, SectionsDecideTheLayerAndNullIsNotAWrite) {
  ProjectFacts facts;
  ASSERT_TRUE(read_config_file(
      "model:\n  num_devices: 8\n  num_layers: 4\ndistributed:\n  nnodes: 2\nmicro_bs: ~\n",
      "exp.yaml", facts));
  ASSERT_EQ(facts.places.size(), 4u);
  EXPECT_EQ(facts.places[0].setting, Setting::kDevices);
  EXPECT_EQ(facts.places[0].layer, config::Layer::kModel);
  EXPECT_EQ(facts.places[1].layer, config::Layer::kModel);
  EXPECT_EQ(facts.places[2].layer, config::Layer::kLaunch);
  EXPECT_EQ(facts.places[3].kind, PlaceKind::kRead);  // written empty: no value to compare
}

}  // namespace
}  // namespace bigmac::audit
