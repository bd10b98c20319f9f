// [trainer.env] and [trainer] probe (issue 14 items 2 and 4).
#include "config/config_printer.h"
#include "config_fixture.h"

namespace bigmac::config {
namespace {

using ::testing::HasSubstr;

TEST_F(ConfigTest, TrainerEnvIsReadWithItsPlaceAndSetOverridesIt) {
  Config c = load_ok("[trainer.env]\nNCCL_DEBUG = \"WARN\"\nOMP_PROC_BIND = 1\n",
                     {"trainer.env.NCCL_DEBUG=INFO"});
  ASSERT_EQ(c.trainer_env.size(), 2u);
  EXPECT_EQ(std::get<std::string>(c.trainer_env.at("NCCL_DEBUG").value), "INFO");
  EXPECT_EQ(std::get<std::string>(c.trainer_env.at("OMP_PROC_BIND").value), "1");
  EXPECT_EQ(c.trainer_env.at("NCCL_DEBUG").assignments.size(), 2u);
  const std::string shown = format_config(c, PrintOptions{true});
  EXPECT_THAT(shown, HasSubstr("[trainer.env]"));
  EXPECT_THAT(shown, HasSubstr("* --set trainer.env.NCCL_DEBUG=INFO"));
  EXPECT_EQ(config_to_json(c, PrintOptions{}).at("trainer").at("env").at("NCCL_DEBUG"), "INFO");
}

TEST_F(ConfigTest, TrainerEnvRejectsWhatIsNotAVariable) {
  const std::string text = join(load_errors("[trainer.env]\n\"1BAD\" = \"x\"\nLIST = [1]\n"));
  EXPECT_THAT(text, HasSubstr("'1BAD' is not an environment variable name"));
  EXPECT_THAT(text, HasSubstr("trainer.env.LIST"));
  EXPECT_THAT(text, HasSubstr("expected a string"));
}

TEST_F(ConfigTest, ProbeFollowsTheProgramUnlessSet) {
  EXPECT_FALSE(load_ok("").trainer.probe);  // bigmac-train
  const std::string python =
      "[trainer]\nkind = \"command\"\ncommand = [\"/usr/bin/python3.11\", \"train.py\"]\n";
  Config c = load_ok(python);
  EXPECT_TRUE(c.trainer.probe);
  EXPECT_THAT(c.settings.find("trainer.probe")->origin.describe(),
              HasSubstr("derived: the command runs python3.11"));
  EXPECT_TRUE(
      load_ok("[trainer]\nkind = \"command\"\ncommand = [\"torchrun\", \"--nproc_per_node\", "
              "\"2\", \"x.py\"]\n")
          .trainer.probe);
  EXPECT_FALSE(load_ok("[trainer]\nkind = \"command\"\ncommand = [\"./train\"]\n").trainer.probe);
  EXPECT_FALSE(load_ok(python + "probe = false\n").trainer.probe);
}

}  // namespace
}  // namespace bigmac::config
