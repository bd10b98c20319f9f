// launch.launcher = "accelerate": one `accelerate launch` per gate, planned like torchrun's agent
// with several processes and like the program itself with one (launch/launcher_commands.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "launch/launch_planner.h"
#include "launch/launcher_commands.h"
#include "launch/trainer_invocation.h"
#include "launch/trainer_probe.h"

namespace bigmac::launch {
namespace {

const std::string kPython = "/venv/bin/python3";

config::Config accelerate_config(int nproc, const std::string& devices = "cpu") {
  config::Config c;
  c.launch.launcher = "accelerate";
  c.launch.nproc_per_node = nproc;
  c.launch.devices = devices;
  c.launch.master_port = 29555;
  return c;
}

PlanInputs script_inputs(std::vector<std::string> argv) {
  PlanInputs in;
  in.trainer_argv = std::move(argv);
  in.log_dir = "/run/02-dp.1";
  return in;
}

// The words of `argv` from the first `--flag` on, up to the script.
std::vector<std::string> after(const std::vector<std::string>& argv, const std::string& word) {
  auto at = std::find(argv.begin(), argv.end(), word);
  return at == argv.end() ? std::vector<std::string>{} : std::vector<std::string>(at, argv.end());
}

TEST(AccelerateLauncher, SeveralProcessesAreItsTorchrunAgentWithWorkerFilesAndNoRestarts) {
  auto plan = plan_launch(accelerate_config(2),
                          script_inputs({kPython, "train.py", "--gradient_accumulation_steps", "2",
                                         "--log", "{log_file}"}));
  ASSERT_TRUE(plan) << plan.error().format();
  ASSERT_EQ(plan->processes.size(), 1u);
  EXPECT_EQ(plan->processes.front().ranks, (std::vector<int>{0, 1}));
  const proc::RankSpec& agent = plan->processes.front().spec;
  EXPECT_EQ(agent.argv, (std::vector<std::string>{kPython,
                                                  "-m",
                                                  "accelerate.commands.launch",
                                                  "--num_processes",
                                                  "2",
                                                  "--num_machines",
                                                  "1",
                                                  "--machine_rank",
                                                  "0",
                                                  "--main_process_ip",
                                                  "127.0.0.1",
                                                  "--main_process_port",
                                                  "29555",
                                                  "--multi_gpu",
                                                  "--max_restarts",
                                                  "0",
                                                  "--monitor_interval",
                                                  "1",
                                                  "--tee",
                                                  "3",
                                                  "--log_dir",
                                                  "/run/02-dp.1/torchrun",
                                                  "train.py",
                                                  "--gradient_accumulation_steps",
                                                  "2",
                                                  "--log",
                                                  "/run/02-dp.1/rank{rank}.log"}));
  // The agent's workers write their output where torchrun's do; the ranks are not given a
  // torchrun environment by the tool (accelerate's agent makes it).
  EXPECT_EQ(plan->torchrun_log_dir, "/run/02-dp.1/torchrun");
  EXPECT_EQ(agent.env.count("RANK"), 0u);
  EXPECT_EQ(agent.env.at("ACCELERATE_USE_CPU"), "true");
  EXPECT_TRUE(elastic_agent(plan->launcher, plan->world_size));
  EXPECT_EQ(launcher_name(plan->launcher), "accelerate");
}

TEST(AccelerateLauncher, OneProcessRunsTheProgramItselfWithCpuOnCpuDevices) {
  auto plan = plan_launch(accelerate_config(1), script_inputs({kPython, "train.py", "--x"}));
  ASSERT_TRUE(plan) << plan.error().format();
  const proc::RankSpec& only = plan->processes.front().spec;
  EXPECT_EQ(after(only.argv, "--cpu"), (std::vector<std::string>{"--cpu", "train.py", "--x"}));
  EXPECT_EQ(std::count(only.argv.begin(), only.argv.end(), "--multi_gpu"), 0);
  // Its output is rank 0's own, on the process's stdout: no worker files to read.
  EXPECT_TRUE(plan->torchrun_log_dir.empty());
  EXPECT_EQ(only.env.count("ACCELERATE_USE_CPU"), 0u);
  EXPECT_FALSE(elastic_agent(plan->launcher, plan->world_size));
}

TEST(AccelerateLauncher, CudaDevicesGetNeitherCpuFlagNorVariable) {
  auto two = plan_launch(accelerate_config(2, "cuda"), script_inputs({kPython, "train.py"}));
  ASSERT_TRUE(two) << two.error().format();
  EXPECT_EQ(two->processes.front().spec.env.count("ACCELERATE_USE_CPU"), 0u);
  auto one = plan_launch(accelerate_config(1, "cuda"), script_inputs({kPython, "train.py"}));
  ASSERT_TRUE(one) << one.error().format();
  const auto& argv = one->processes.front().spec.argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--cpu"), 0);
}

TEST(AccelerateLauncher, ConfigFileAndExtraArgsComeBeforeTheScript) {
  config::Config c = accelerate_config(2);
  c.launch.accelerate.config_file = "/home/u/fsdp.yaml";
  c.launch.accelerate.extra_args = {"--mixed_precision", "bf16"};
  auto plan = plan_launch(c, script_inputs({kPython, "train.py", "--lr", "0.1"}));
  ASSERT_TRUE(plan) << plan.error().format();
  EXPECT_EQ(after(plan->processes.front().spec.argv, "--config_file"),
            (std::vector<std::string>{"--config_file", "/home/u/fsdp.yaml", "--mixed_precision",
                                      "bf16", "train.py", "--lr", "0.1"}));
}

// accelerate takes one kind of run: where the user's options or config file choose it (FSDP,
// DeepSpeed, ...), the tool adds neither --multi_gpu nor --cpu, which accelerate would refuse
// beside them (or which would hide the config file's distributed_type).
TEST(AccelerateLauncher, TheUsersRunKindIsLeftToAccelerate) {
  const auto count = [](const proc::RankSpec& spec, const std::string& word) {
    return std::count(spec.argv.begin(), spec.argv.end(), word);
  };
  config::Config fsdp = accelerate_config(2);
  fsdp.launch.accelerate.extra_args = {"--use-fsdp", "--fsdp_sharding_strategy", "FULL_SHARD"};
  auto two = plan_launch(fsdp, script_inputs({kPython, "train.py"}));
  ASSERT_TRUE(two) << two.error().format();
  EXPECT_EQ(count(two->processes.front().spec, "--multi_gpu"), 0);
  EXPECT_EQ(count(two->processes.front().spec, "--use-fsdp"), 1);
  config::Config file = accelerate_config(1);
  file.launch.accelerate.config_file = "/home/u/deepspeed.yaml";
  auto one = plan_launch(file, script_inputs({kPython, "train.py"}));
  ASSERT_TRUE(one) << one.error().format();
  EXPECT_EQ(count(one->processes.front().spec, "--cpu"), 0);
  EXPECT_TRUE(accelerate_run_kind_option("--multi_gpu"));
  EXPECT_TRUE(accelerate_run_kind_option("--use_deepspeed"));
  EXPECT_FALSE(accelerate_run_kind_option("--mixed_precision=bf16"));
  EXPECT_FALSE(accelerate_run_kind_option("cpu"));
}

TEST(AccelerateLauncher, ModulesScriptsAndOtherProgramsAreWrittenAsAccelerateTakesThem) {
  auto module =
      plan_launch(accelerate_config(2), script_inputs({kPython, "-m", "pkg.train", "-v"}));
  ASSERT_TRUE(module) << module.error().format();
  EXPECT_EQ(after(module->processes.front().spec.argv, "--module"),
            (std::vector<std::string>{"--module", "pkg.train", "-v"}));
  // A script run by its #! line: accelerate's own command, which runs it with its interpreter.
  auto script = plan_launch(accelerate_config(2), script_inputs({"./train.py", "--a"}));
  ASSERT_TRUE(script) << script.error().format();
  const auto& argv = script->processes.front().spec.argv;
  EXPECT_EQ((std::vector<std::string>(argv.begin(), argv.begin() + 2)),
            (std::vector<std::string>{"accelerate", "launch"}));
  EXPECT_EQ((std::vector<std::string>(argv.end() - 2, argv.end())),
            (std::vector<std::string>{"./train.py", "--a"}));
  auto binary = plan_launch(accelerate_config(2), script_inputs({"/opt/trainer", "--a"}));
  ASSERT_TRUE(binary) << binary.error().format();
  EXPECT_EQ(after(binary->processes.front().spec.argv, "--no_python"),
            (std::vector<std::string>{"--no_python", "/opt/trainer", "--a"}));
}

TEST(AccelerateLauncher, ErrorsNameTheKeyAndSayWhatToDo) {
  auto options = plan_launch(accelerate_config(2), script_inputs({kPython, "-u", "train.py"}));
  ASSERT_FALSE(options);
  EXPECT_EQ(options.error().key, "trainer.command");
  EXPECT_NE(options.error().message.find("`/venv/bin/python3 -u train.py`"), std::string::npos);
  EXPECT_NE(options.error().hint.find("-m"), std::string::npos);
  config::Config two_nodes = accelerate_config(2);
  two_nodes.launch.nnodes = 2;
  auto nodes = plan_launch(two_nodes, script_inputs({kPython, "train.py"}));
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().key, "launch.nnodes");
  EXPECT_NE(nodes.error().message.find("nnodes = 2"), std::string::npos);
  config::Config typo = accelerate_config(2);
  typo.launch.launcher = "acelerate";
  auto unknown = plan_launch(typo, script_inputs({kPython, "train.py"}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().hint.find("'accelerate'"), std::string::npos);
}

TEST(TrainerEnvironment, PlaceholdersInTrainerEnvGetTheGatesLayout) {
  config::Config c = accelerate_config(2);
  c.launch.nnodes = 1;
  const auto set = [&c](const std::string& name, const std::string& value) {
    config::Setting s;
    s.key = "trainer.env." + name;
    s.value = value;
    c.trainer_env[name] = s;
  };
  set("PL_TRAINER_DEVICES", "{nproc_per_node}");
  set("PL_TRAINER_NUM_NODES", "{nnodes}");
  set("PLAIN", "{unknown}");
  const auto placeholders = gate_placeholders(c, "dp", "/run/02-dp.1/gate.toml", "/run");
  const auto env = trainer_environment(c, "/run/02-dp.1", "/probe", "", placeholders);
  EXPECT_EQ(env.at("PL_TRAINER_DEVICES"), "2");
  EXPECT_EQ(env.at("PL_TRAINER_NUM_NODES"), "1");
  EXPECT_EQ(env.at("PLAIN"), "{unknown}");  // not a placeholder: as written
  const auto names = command_placeholders();
  EXPECT_NE(std::find(names.begin(), names.end(), "nproc_per_node"), names.end());
}

}  // namespace
}  // namespace bigmac::launch
