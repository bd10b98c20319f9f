// `bigmac-bringup env`'s printing from a fixed set of facts, and the choice of interpreter.

#include "adopt/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace bigmac::adopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

EnvironmentFacts sample() {
  EnvironmentFacts f;
  f.tool_version = "9.8.7";
  f.tool_program = "/opt/bigmac/bin/bigmac-bringup";
  f.probe_dir = "/opt/bigmac/share/bigmac-bringup/probe";
  f.trainer = "command: python3 train.py";
  f.trainer_origin = "--set trainer.command=[\"python3\", \"train.py\"]";
  f.launcher = "torchrun";
  f.interpreter_choice = "the trainer command's program";

  InterpreterFacts gpu;
  gpu.name = "python3";
  gpu.origin = "the trainer command's program";
  gpu.path = "/usr/bin/python3";
  gpu.python_version = "3.10.12";
  gpu.executable = "/usr/bin/python3";
  gpu.probe_imports = true;
  gpu.probe_version = "0.1.0";
  gpu.torch.importable = true;
  gpu.torch.version = "2.3.1+cu121";
  gpu.torch.location = "/usr/lib/python3/dist-packages/torch";
  gpu.torch.cuda_version = "12.1";
  gpu.torch.cuda_available = true;
  gpu.torch.nccl_version = "2.20.5";
  gpu.torch.distributed_available = true;
  gpu.torch.gloo_available = true;
  gpu.torch.nccl_available = true;
  gpu.torch.device_count = 2;
  gpu.torch.devices = {"NVIDIA H200", "NVIDIA H200"};
  f.interpreters.push_back(gpu);

  InterpreterFacts missing;
  missing.name = "/nowhere/python3";
  missing.origin = "python3 on PATH";
  missing.problem = "not found: cannot execute '/nowhere/python3': no such file";
  f.interpreters.push_back(missing);

  f.torchrun = {"torchrun", "/usr/bin/torchrun", "", "runs /usr/bin/python3 (its #! line)"};
  f.srun = {"srun", "", "'srun' not found in PATH (/usr/bin)", ""};
  f.slurm = {{"SLURM_JOB_ID", "4242"}, {"SLURM_NNODES", "2"}};
  f.distributed_env = {{"MASTER_PORT", "29400"}};
  PortFacts taken;
  taken.port = 29500;
  taken.origin = "torchrun's default master port";
  taken.free = false;
  taken.bind_error = "Address already in use";
  taken.holders = {"pid 77 (python3 old.py)"};
  f.ports.push_back(taken);
  f.os_free_port = 41234;
  f.hostname = "node-7";
  f.cpus_usable = 8;
  f.cpus_online = 16;
  f.open_files_soft = "1024";
  f.open_files_hard = "unlimited";
  return f;
}

TEST(EnvironmentText, PrintsEveryFactWithItsSource) {
  const std::string text = environment_text(sample());
  EXPECT_THAT(text, HasSubstr("\ntool\n  version:       9.8.7\n"));
  EXPECT_THAT(text, HasSubstr("2.3.1+cu121 at /usr/lib/python3/dist-packages/torch "
                              "(torch.__version__)"));
  EXPECT_THAT(text, HasSubstr("CUDA 12.1 (torch.version.cuda)"));
  EXPECT_THAT(text, HasSubstr("cuda available: yes (torch.cuda.is_available())"));
  EXPECT_THAT(text, HasSubstr("2.20.5 (torch.cuda.nccl.version())"));
  EXPECT_THAT(text, HasSubstr("gloo available: yes (torch.distributed.is_gloo_available())"));
  EXPECT_THAT(text, HasSubstr("device 1:       NVIDIA H200 (torch.cuda.get_device_name)"));
  EXPECT_THAT(text, HasSubstr("probe imports:  yes, bigmac_probe 0.1.0"));
  EXPECT_THAT(text, HasSubstr("status: not found: cannot execute '/nowhere/python3'"));
  EXPECT_THAT(text, HasSubstr("torch imports under /usr/bin/python3; not under /nowhere/python3"));
  EXPECT_THAT(text, HasSubstr("torchrun: /usr/bin/torchrun (PATH); runs /usr/bin/python3"));
  EXPECT_THAT(text, HasSubstr("srun:     not found: 'srun' not found in PATH"));
  EXPECT_THAT(text, HasSubstr("SLURM_JOB_ID: 4242"));
  EXPECT_THAT(text, Not(HasSubstr("SLURM_JOB_ID is not set")));
  EXPECT_THAT(text, HasSubstr("MASTER_PORT: 29400"));
  EXPECT_THAT(text, HasSubstr("port 29500: taken: Address already in use, held by pid 77 "
                              "(python3 old.py)"));
  EXPECT_THAT(text, HasSubstr("free port:  41234 (the OS's pick"));
  EXPECT_THAT(text, HasSubstr("cpus:       8 usable of 16 online"));
  EXPECT_THAT(text, HasSubstr("open files: soft 1024, hard unlimited"));
  EXPECT_THAT(text, HasSubstr("trainer:      command: python3 train.py (--set trainer.command="));
}

TEST(EnvironmentText, KeysAlignWithinASection) {
  const std::string text = environment_text(sample());
  const std::size_t host = text.find("\nhost\n");
  ASSERT_NE(host, std::string::npos);
  EXPECT_THAT(text.substr(host), HasSubstr("  hostname:   node-7 (gethostname)\n"
                                           "  cpus:       8 usable"));
}

TEST(EnvironmentText, NoTorchNoSlurmNoVariables) {
  EnvironmentFacts f = sample();
  f.interpreters.resize(1);
  f.interpreters[0].torch = TorchFacts{};
  f.interpreters[0].torch.error = "ModuleNotFoundError: No module named 'torch'";
  f.slurm.clear();
  f.distributed_env.clear();
  const std::string text = environment_text(f);
  EXPECT_THAT(text, HasSubstr("torch:         not importable: ModuleNotFoundError: No module "
                              "named 'torch' (import torch)"));
  EXPECT_THAT(text, HasSubstr("none of the interpreters asked imports torch"));
  EXPECT_THAT(text, HasSubstr("allocation: none: SLURM_JOB_ID is not set"));
  EXPECT_THAT(text, HasSubstr("set: none of MASTER_*"));
  EXPECT_THAT(text, Not(HasSubstr("cuda available")));
}

TEST(EnvironmentJson, HoldsTheSameFacts) {
  const auto j = nlohmann::json::parse(environment_json(sample()));
  EXPECT_EQ(j["tool"]["version"], "9.8.7");
  EXPECT_EQ(j["configuration"]["launcher"], "torchrun");
  ASSERT_EQ(j["interpreters"].size(), 2u);
  const auto& gpu = j["interpreters"][0];
  EXPECT_EQ(gpu["path"], "/usr/bin/python3");
  EXPECT_EQ(gpu["found"], true);
  EXPECT_EQ(gpu["answered"], true);
  EXPECT_EQ(gpu["torch"]["version"], "2.3.1+cu121");
  EXPECT_EQ(gpu["torch"]["cuda_available"], true);
  EXPECT_EQ(gpu["torch"]["nccl_version"], "2.20.5");
  EXPECT_EQ(gpu["torch"]["device_count"], 2);
  EXPECT_EQ(gpu["torch"]["devices"][1], "NVIDIA H200");
  EXPECT_EQ(gpu["probe"]["imports"], true);
  const auto& missing = j["interpreters"][1];
  EXPECT_EQ(missing["found"], false);
  EXPECT_EQ(missing["answered"], false);
  EXPECT_THAT(missing["problem"].get<std::string>(), HasSubstr("not found"));
  EXPECT_EQ(j["launchers"]["torchrun"]["found"], true);
  EXPECT_EQ(j["launchers"]["srun"]["found"], false);
  EXPECT_EQ(j["slurm"]["inside_allocation"], true);
  EXPECT_EQ(j["slurm"]["variables"]["SLURM_NNODES"], "2");
  EXPECT_EQ(j["distributed_env"]["MASTER_PORT"], "29400");
  EXPECT_EQ(j["network"]["ports"][0]["port"], 29500);
  EXPECT_EQ(j["network"]["ports"][0]["free"], false);
  EXPECT_EQ(j["network"]["ports"][0]["holders"][0], "pid 77 (python3 old.py)");
  EXPECT_EQ(j["network"]["os_free_port"], 41234);
  EXPECT_EQ(j["host"]["hostname"], "node-7");
  EXPECT_EQ(j["host"]["open_files_hard"], "unlimited");
}

class InterpreterChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bigmac-env-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string script(const std::string& name, const std::string& first_line) {
    const auto path = dir_ / name;
    std::ofstream(path) << first_line << "\nprint('hi')\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(InterpreterChoice, ShebangLines) {
  EXPECT_EQ(shebang_interpreter(script("a", "#!/usr/bin/python3 -u")), "/usr/bin/python3");
  EXPECT_EQ(shebang_interpreter(script("b", "#! /usr/bin/env -S python3.11")), "python3.11");
  EXPECT_EQ(shebang_interpreter(script("c", "import os")), "");
  EXPECT_EQ(shebang_interpreter(dir_ / "absent"), "");
}

TEST_F(InterpreterChoice, TheCommandsPythonOrItsShebangElseTheDefaults) {
  config::TrainerSection trainer;
  trainer.kind = "command";
  std::string why;
  trainer.command = {"/nowhere/python3.11", "train.py"};
  auto names = interpreters_for(trainer, dir_.string(), why);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].first, "/nowhere/python3.11");

  script("torchrun", "#!/opt/venv/bin/python3");
  trainer.command = {"torchrun", "--nproc_per_node=2", "train.py"};
  names = interpreters_for(trainer, dir_.string(), why);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].first, "/opt/venv/bin/python3");
  EXPECT_THAT(why, HasSubstr("#! line"));

  script("launch.sh", "#!/bin/bash");
  trainer.command = {"launch.sh"};
  names = interpreters_for(trainer, dir_.string(), why);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back().first, "/usr/bin/python3");
  EXPECT_THAT(why, HasSubstr("not a Python interpreter"));

  trainer.kind = "builtin";
  names = interpreters_for(trainer, dir_.string(), why);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back().first, "/usr/bin/python3");
  EXPECT_THAT(why, HasSubstr("no trainer command names one"));
}

// What env says of torchrun for a trainer on a Python interpreter: the gates start that
// interpreter's own (a torch 1.13 torchrun on PATH would hang torch 2.x workers).
TEST(EnvironmentFactsOfTorchrun, ATrainerOnAnInterpreterGetsThatInterpretersTorchrun) {
  config::Config c;
  c.trainer.kind = "command";
  c.trainer.command = {"/nowhere/venv/bin/python", "train.py"};
  EnvironmentRequest request;
  request.config = &c;
  request.interpreter_limit = std::chrono::milliseconds(2000);
  const EnvironmentFacts facts = gather_environment(request);
  EXPECT_THAT(facts.torchrun.detail,
              HasSubstr("the gates start /nowhere/venv/bin/python -m torch.distributed.run"));
  EXPECT_THAT(environment_text(facts), HasSubstr("-m torch.distributed.run instead"));

  c.trainer.command = {"train.py"};
  EXPECT_THAT(gather_environment(request).torchrun.detail, Not(HasSubstr("the gates start")));
}

}  // namespace
}  // namespace bigmac::adopt
