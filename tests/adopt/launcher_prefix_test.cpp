#include "adopt/launcher_prefix.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bigmac::adopt {
namespace {

using Words = std::vector<std::string>;

std::string venv_python(const std::string&) { return "/venv/bin/python"; }
std::string no_python(const std::string&) { return ""; }

TEST(LauncherPrefix, AccelerateLaunchGivesTheProgramOnAccelerateInterpreter) {
  const auto p =
      strip_launcher({"accelerate", "launch", "--num_processes", "2", "--mixed_precision=no",
                      "--config_file", "acc.yaml", "--multi_gpu", "train.py", "--lr", "3e-4"},
                     venv_python);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->launcher, "accelerate");
  EXPECT_EQ(p->program, (Words{"/venv/bin/python", "train.py", "--lr", "3e-4"}));
  EXPECT_EQ(p->config_file, "acc.yaml");
  EXPECT_EQ(p->extra_args, (Words{"--mixed_precision=no"}));
  EXPECT_EQ(p->dropped, (Words{"--num_processes", "2", "--multi_gpu"}));
}

TEST(LauncherPrefix, DashedOptionsAModuleAndThePythonModuleForm) {
  const auto p = strip_launcher({"python3", "-m", "accelerate.commands.launch",
                                 "--main-process-port", "29555", "--quiet", "-m", "pkg.train"},
                                no_python);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->program, (Words{"python3", "-m", "pkg.train"}));
  EXPECT_EQ(p->dropped, (Words{"--main-process-port", "29555"}));
  EXPECT_EQ(p->extra_args, (Words{"--quiet"}));
  const auto cli = strip_launcher(
      {"/v/bin/python", "-m", "accelerate.commands.accelerate_cli", "launch", "t.py"}, no_python);
  ASSERT_TRUE(cli);
  EXPECT_EQ(cli->program, (Words{"/v/bin/python", "t.py"}));
}

TEST(LauncherPrefix, OtherCommandsAndUnusableOnesAreLeftAsTheyAre) {
  EXPECT_FALSE(strip_launcher({"python3", "train.py"}, venv_python));
  EXPECT_FALSE(strip_launcher({"torchrun", "--nproc_per_node", "2", "t.py"}, venv_python));
  EXPECT_FALSE(strip_launcher({"accelerate", "config"}, venv_python));
  // No script among its words, no interpreter found, or a program that is no Python script.
  EXPECT_FALSE(strip_launcher({"accelerate", "launch", "--num_processes", "2"}, venv_python));
  EXPECT_FALSE(strip_launcher({"accelerate", "launch", "t.py"}, no_python));
  EXPECT_FALSE(strip_launcher({"accelerate", "launch", "--no_python", "./a.out"}, venv_python));
}

}  // namespace
}  // namespace bigmac::adopt
