#include "audit/setting_catalog.h"

#include <gtest/gtest.h>

#include <set>

namespace bigmac::audit {
namespace {

TEST(SettingCatalog, UsualSpellingsMapOntoOneSetting) {
  for (const char* name : {"micro_batch_size", "micro_bs", "per_device_train_batch_size",
                           "--micro-batch-size", "MICRO_BATCH_SIZE", "local_batch_size"}) {
    EXPECT_EQ(find_setting(name), Setting::kMicroBatchSize) << name;
  }
  for (const char* name : {"gradient_accumulation_steps", "accum", "grad_accum"}) {
    EXPECT_EQ(find_setting(name), Setting::kGradAccum) << name;
  }
  for (const char* name : {"pipeline_model_parallel_size", "pp", "pp_size",
                           "--pipeline-model-parallel-size", "pipeline_parallel_degree"}) {
    EXPECT_EQ(find_setting(name), Setting::kPpSize) << name;
  }
  EXPECT_EQ(find_setting("--nproc_per_node"), Setting::kNprocPerNode);
  EXPECT_EQ(find_setting("--nnodes"), Setting::kNnodes);
  EXPECT_EQ(find_setting("WORLD_SIZE"), Setting::kWorldSize);
  EXPECT_EQ(find_setting("--training.local_batch_size"), Setting::kMicroBatchSize);
  EXPECT_FALSE(find_setting("learning_rate"));
  EXPECT_FALSE(find_setting("batch_size"));  // ambiguous: micro in some projects, global in others
}

TEST(SettingCatalog, EverySpellingBelongsToOneSetting) {
  std::set<std::string> seen;
  for (const SettingInfo& row : setting_catalog()) {
    EXPECT_EQ(&info(row.setting), &row);
    for (std::string_view s : row.spellings) {
      EXPECT_TRUE(seen.insert(std::string(s)).second) << s << " is listed twice";
      EXPECT_EQ(normalise_name(s), s) << s << " is not written normalised";
    }
  }
}

TEST(SettingCatalog, SectionNamesGiveTheirLayer) {
  EXPECT_EQ(section_layer("model"), config::Layer::kModel);
  EXPECT_EQ(section_layer("language_model"), config::Layer::kModel);
  EXPECT_EQ(section_layer("model_parallel"), config::Layer::kSchedule);
  EXPECT_EQ(section_layer("TrainingArguments"), config::Layer::kSchedule);
  EXPECT_EQ(section_layer("TransformerModelArgs"), config::Layer::kModel);
  EXPECT_EQ(section_layer("distributed"), config::Layer::kLaunch);
  EXPECT_FALSE(section_layer("job"));
}

}  // namespace
}  // namespace bigmac::audit
