#include "launch/launch_planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace bigmac::launch {
namespace {

config::Config make_config(const std::string& launcher, int nproc,
                           const std::string& devices = "cpu") {
  config::Config c;
  c.launch.launcher = launcher;
  c.launch.nproc_per_node = nproc;
  c.launch.devices = devices;
  c.launch.master_port = 29555;
  c.launch.threads_per_rank = 2;
  return c;
}

PlanInputs make_inputs() {
  PlanInputs in;
  in.trainer_argv = {"/opt/bigmac/bigmac-train",
                     "--config",
                     "/run/gate/dp.toml",
                     "--log-file",
                     "{log_file}",
                     "--tag",
                     "r{rank}of{world_size}"};
  in.log_dir = "/run/gate";
  in.extra_env = {{"BIGMAC_GATE", "dp"}};
  return in;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(LaunchPlanner, BuiltinGivesEachRankTorchrunCompatibleEnvironment) {
  auto plan = plan_launch(make_config("builtin", 4), make_inputs());
  ASSERT_TRUE(plan) << plan.error().format();
  ASSERT_EQ(plan->processes.size(), 4u);
  ASSERT_EQ(plan->ranks.size(), 4u);
  const proc::RankSpec& r2 = plan->processes[2].spec;
  EXPECT_EQ(r2.rank, 2);
  EXPECT_EQ(r2.env.at("RANK"), "2");
  EXPECT_EQ(r2.env.at("LOCAL_RANK"), "2");
  EXPECT_EQ(r2.env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(r2.env.at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(r2.env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(r2.env.at("MASTER_PORT"), "29555");
  EXPECT_EQ(r2.env.at("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(r2.env.at("BIGMAC_GATE"), "dp");
  EXPECT_EQ(r2.env.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(r2.argv,
            (std::vector<std::string>{"/opt/bigmac/bigmac-train", "--config", "/run/gate/dp.toml",
                                      "--log-file", "/run/gate/rank2.log", "--tag", "r2of4"}));
  EXPECT_EQ(r2.stdout_path, "/run/gate/rank2.stdout");
  EXPECT_EQ(r2.stderr_path, "/run/gate/rank2.stderr");
  EXPECT_EQ(plan->ranks[2].device, "cpu");
  EXPECT_EQ(plan->trainer_program, "/opt/bigmac/bigmac-train");
}

TEST(LaunchPlanner, CudaMapsLocalRanksToTheVisibleDevices) {
  PlanInputs in = make_inputs();
  in.visible_devices = {"3", "5"};
  auto plan = plan_launch(make_config("builtin", 2, "cuda"), in);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ranks[1].device, "cuda:5");
  EXPECT_EQ(plan->processes[0].spec.env.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(plan->processes[1].spec.env.at("CUDA_VISIBLE_DEVICES"), "5");

  in.one_device_per_rank = false;
  auto shared = plan_launch(make_config("builtin", 2, "cuda"), in);
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->processes[1].spec.env.count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST(LaunchPlanner, AutoDevicesFollowWhatIsVisible) {
  PlanInputs in = make_inputs();
  auto cpu = plan_launch(make_config("builtin", 1, "auto"), in);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->devices, "cpu");
  in.visible_devices = {"0"};
  auto gpu = plan_launch(make_config("builtin", 1, "auto"), in);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->devices, "cuda");
}

TEST(LaunchPlanner, TorchrunWrapsTheTrainerInOneProcess) {
  auto plan = plan_launch(make_config("torchrun", 2), make_inputs());
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->processes.size(), 1u);
  const std::vector<std::string>& argv = plan->processes[0].spec.argv;
  const std::vector<std::string> head = {"torchrun",
                                         "--nnodes",
                                         "1",
                                         "--nproc_per_node",
                                         "2",
                                         "--node_rank",
                                         "0",
                                         "--master_addr",
                                         "127.0.0.1",
                                         "--master_port",
                                         "29555",
                                         "--max_restarts",
                                         "0",
                                         "--monitor_interval",
                                         "1",
                                         "--redirects",
                                         "2",
                                         "--tee",
                                         "1",
                                         "--log_dir",
                                         "/run/gate/torchrun",
                                         "--no_python",
                                         "/opt/bigmac/bigmac-train"};
  ASSERT_GT(argv.size(), head.size());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), argv.begin()));
  // One argv serves every rank: {rank} is left for the trainer to expand from $RANK.
  EXPECT_TRUE(contains(argv, "/run/gate/rank{rank}.log"));
  EXPECT_TRUE(contains(argv, "r{rank}of2"));
  EXPECT_EQ(plan->processes[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan->processes[0].spec.env.at("OMP_NUM_THREADS"), "2");
}

TEST(LaunchPlanner, TorchrunRunsPythonScriptsThroughPython) {
  PlanInputs in = make_inputs();
  in.trainer_argv = {"train.py", "--steps", "3"};
  auto plan = plan_launch(make_config("torchrun", 2), in);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(contains(plan->processes[0].spec.argv, "--no_python"));
  EXPECT_EQ(plan->processes[0].spec.argv.back(), "3");
}

// The agent must share the workers' torch: a torch 1.13 torchrun first on PATH hangs torch 2.x
// workers at their rendezvous.
TEST(LaunchPlanner, TorchrunIsTheInterpretersOwnWhenATrainerRunsOnAPythonInterpreter) {
  PlanInputs in = make_inputs();
  for (const std::string python : {"/venv/bin/python", "python3", "/usr/bin/python3.11"}) {
    in.trainer_argv = {python, "train.py", "--steps", "3"};
    auto plan = plan_launch(make_config("torchrun", 2), in);
    ASSERT_TRUE(plan);
    const std::vector<std::string>& argv = plan->processes[0].spec.argv;
    ASSERT_GE(argv.size(), 4u);
    EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 4),
              (std::vector<std::string>{python, "-m", "torch.distributed.run", "--nnodes"}));
    EXPECT_TRUE(contains(argv, "--no_python")) << python;
  }
  // Neither a script nor a binary names an interpreter: the torchrun on PATH.
  for (const std::string program :
       {"train.py", "/opt/bigmac/bigmac-train", "/bin/python-wrapper"}) {
    in.trainer_argv = {program, "--steps", "3"};
    auto plan = plan_launch(make_config("torchrun", 2), in);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->processes[0].spec.argv.front(), "torchrun") << program;
  }
}

/// No SLURM_* variables: the orchestrator runs outside an allocation.
const char* no_env(const char*) { return nullptr; }

TEST(LaunchPlanner, SlurmStartsEveryRankThroughTheWrapper) {
  config::Config c = make_config("slurm", 4, "cuda");
  c.launch.nnodes = 2;
  c.launch.slurm.partition = "gpu";
  c.launch.slurm.time = "00:30:00";
  c.launch.slurm.extra_args = {"--exclude=n3", "--mem=0"};
  PlanInputs in = make_inputs();
  in.environment = no_env;
  in.rank_env_program = "/opt/bigmac/bigmac-rank-env";
  in.job_name = "bigmac-test";
  auto plan = plan_launch(c, in);
  ASSERT_TRUE(plan) << plan.error().format();
  ASSERT_EQ(plan->processes.size(), 1u);
  EXPECT_EQ(plan->world_size, 8);
  EXPECT_FALSE(plan->slurm.inside_allocation);
  EXPECT_EQ(plan->slurm.cpus_per_node, 8);
  EXPECT_EQ(plan->slurm.gpus_per_node, 4);
  const std::vector<std::string>& argv = plan->processes[0].spec.argv;
  const std::vector<std::string> head = {"srun",
                                         "--partition=gpu",
                                         "--time=00:30:00",
                                         "--job-name=bigmac-test",
                                         "--nodes=2",
                                         "--ntasks=8",
                                         "--ntasks-per-node=4",
                                         "--cpus-per-task=2",
                                         "--kill-on-bad-exit=1",
                                         "--label",
                                         "--unbuffered",
                                         "--export=ALL",
                                         "--gpus-per-task=1",
                                         "--exclude=n3",
                                         "--mem=0",
                                         "/opt/bigmac/bigmac-rank-env",
                                         "--from",
                                         "slurm",
                                         "--master-port",
                                         "29555",
                                         "--scontrol",
                                         "scontrol",
                                         "--",
                                         "/opt/bigmac/bigmac-train"};
  ASSERT_GT(argv.size(), head.size());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), argv.begin()));
  // The wrapper derives RANK and WORLD_SIZE per task; srun is not given half of them.
  EXPECT_EQ(plan->processes[0].spec.env.count("WORLD_SIZE"), 0u);
  EXPECT_EQ(plan->processes[0].spec.env.count("RANK"), 0u);
  EXPECT_TRUE(contains(argv, "/run/gate/rank{rank}.log"));
  EXPECT_EQ(plan->master_addr, "<first node of the step>");
  EXPECT_EQ(plan->ranks[5].node_rank, 1);
  EXPECT_EQ(plan->ranks[5].local_rank, 1);
}

TEST(LaunchPlanner, SlurmInsideAnAllocationAddsAStepAndLeavesJobOptions) {
  config::Config c = make_config("slurm", 2);
  c.launch.nnodes = 2;
  c.launch.slurm.partition = "gpu";
  c.launch.slurm.account = "proj";
  PlanInputs in = make_inputs();
  in.environment = [](const char* name) -> const char* {
    const std::string n = name;
    if (n == "SLURM_JOB_ID") return "77";
    if (n == "SLURM_JOB_NODELIST") return "node[007-008]";
    return nullptr;
  };
  auto plan = plan_launch(c, in);
  ASSERT_TRUE(plan) << plan.error().format();
  EXPECT_TRUE(plan->slurm.inside_allocation);
  EXPECT_EQ(plan->slurm.job_id, "77");
  EXPECT_EQ(plan->master_addr, "node007");
  const std::vector<std::string>& argv = plan->processes[0].spec.argv;
  EXPECT_FALSE(contains(argv, "--partition=gpu"));
  EXPECT_FALSE(contains(argv, "--account=proj"));
  EXPECT_FALSE(contains(argv, "--master-addr"));
}

TEST(LaunchPlanner, SlurmPassesAnExplicitMasterAddress) {
  config::Config c = make_config("slurm", 2);
  c.launch.master_addr = "10.0.0.5";
  c.settings.entries.push_back(
      config::Setting{"launch.master_addr",
                      std::string("10.0.0.5"),
                      config::Origin{config::SourceKind::kCommandLine, "--set", 0, 0},
                      {}});
  PlanInputs in = make_inputs();
  in.environment = no_env;
  auto plan = plan_launch(c, in);
  ASSERT_TRUE(plan) << plan.error().format();
  const std::vector<std::string>& argv = plan->processes[0].spec.argv;
  auto at = std::find(argv.begin(), argv.end(), "--master-addr");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "10.0.0.5");
  EXPECT_TRUE(plan->slurm.explicit_master_addr);

  // A loopback address cannot be reached from another node: the first node is used instead.
  c.launch.master_addr = "127.0.0.1";
  auto loopback = plan_launch(c, in);
  ASSERT_TRUE(loopback);
  EXPECT_FALSE(loopback->slurm.explicit_master_addr);
  EXPECT_EQ(loopback->master_addr, "<first node of the step>");
}

TEST(LaunchPlanner, SlurmTorchrunRunsOneAgentPerNodeWithC10dRendezvous) {
  config::Config c = make_config("slurm+torchrun", 2);
  c.launch.nnodes = 2;
  PlanInputs in = make_inputs();
  in.environment = no_env;
  in.rank_env_program = "/opt/bigmac/bigmac-rank-env";
  in.job_name = "bigmac-test";
  auto plan = plan_launch(c, in);
  ASSERT_TRUE(plan) << plan.error().format();
  ASSERT_EQ(plan->processes.size(), 1u);
  const std::vector<std::string>& argv = plan->processes[0].spec.argv;
  EXPECT_TRUE(contains(argv, "--ntasks=2"));
  EXPECT_TRUE(contains(argv, "--ntasks-per-node=1"));
  EXPECT_TRUE(contains(argv, "--cpus-per-task=4"));  // 2 ranks x 2 threads
  EXPECT_TRUE(contains(argv, "slurm-node"));
  EXPECT_TRUE(contains(argv, "torchrun"));
  EXPECT_TRUE(contains(argv, "{node_rank}"));
  EXPECT_TRUE(contains(argv, "{master_addr}:{master_port}"));
  EXPECT_TRUE(contains(argv, "c10d"));
  EXPECT_TRUE(contains(argv, "/run/gate/torchrun-node{node_rank}"));
  // Workers write their own output files through the wrapper.
  EXPECT_TRUE(contains(argv, "--output"));
  EXPECT_EQ(plan->ranks[3].stderr_path, "/run/gate/rank3.stderr");
  EXPECT_EQ(plan->ranks[3].stdout_path, "/run/gate/rank3.stdout");
}

TEST(LaunchPlanner, TorchrunWithSeveralNodesStartsOneAgentPerNodeOnThisHost) {
  config::Config c = make_config("torchrun", 2);
  c.launch.nnodes = 2;
  PlanInputs in = make_inputs();
  in.rank_env_program = "/opt/bigmac/bigmac-rank-env";
  in.job_name = "bigmac-test";
  auto plan = plan_launch(c, in);
  ASSERT_TRUE(plan) << plan.error().format();
  ASSERT_EQ(plan->processes.size(), 2u);
  for (int node = 0; node < 2; ++node) {
    const std::vector<std::string>& argv = plan->processes[node].spec.argv;
    auto at = std::find(argv.begin(), argv.end(), "--node_rank");
    ASSERT_NE(at, argv.end());
    EXPECT_EQ(*(at + 1), std::to_string(node));
    EXPECT_TRUE(contains(argv, "127.0.0.1:29555"));
    EXPECT_TRUE(contains(argv, "--rdzv_backend"));
    EXPECT_TRUE(contains(argv, "bigmac-test"));  // one rendezvous id for both agents
    EXPECT_TRUE(contains(argv, "/run/gate/torchrun-node" + std::to_string(node)));
    EXPECT_EQ(plan->processes[node].ranks, (std::vector<int>{node * 2, node * 2 + 1}));
  }
  EXPECT_EQ(plan->ranks[2].stderr_path, "/run/gate/rank2.stderr");
}

TEST(LaunchPlanner, ErrorsNameTheKeyAndSuggest) {
  auto typo = plan_launch(make_config("torchrum", 2), make_inputs());
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().key, "launch.launcher");
  EXPECT_NE(typo.error().hint.find("torchrun"), std::string::npos);

  config::Config multi = make_config("builtin", 2);
  multi.launch.nnodes = 2;
  auto nodes = plan_launch(multi, make_inputs());
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().key, "launch.nnodes");
  EXPECT_NE(nodes.error().message.find("nnodes = 2"), std::string::npos);
  EXPECT_NE(nodes.error().hint.find("slurm"), std::string::npos);

  auto devices = plan_launch(make_config("builtin", 2, "tpu"), make_inputs());
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error().key, "launch.devices");

  PlanInputs empty = make_inputs();
  empty.trainer_argv.clear();
  EXPECT_FALSE(plan_launch(make_config("builtin", 1), empty));
}

TEST(LaunchPlan, RendersTextAndJson) {
  PlanInputs in = make_inputs();
  in.trainer_argv.push_back("two words");
  auto plan = plan_launch(make_config("builtin", 2), in);
  ASSERT_TRUE(plan);
  const std::string text = render_text(*plan);
  EXPECT_NE(text.find("launcher builtin: world_size 2 = 1 node(s) x 2 process(es), master "
                      "127.0.0.1:29555, devices cpu"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("argv   /opt/bigmac/bigmac-train --config /run/gate/dp.toml --log-file "
                      "/run/gate/rank1.log --tag r1of2 'two words'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("RANK=1"), std::string::npos);
  const nlohmann::json j = to_json(*plan);
  EXPECT_EQ(j["launcher"], "builtin");
  EXPECT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes"][1]["argv"][4], "/run/gate/rank1.log");
  EXPECT_EQ(j["processes"][1]["env"]["RANK"], "1");
  EXPECT_EQ(j["ranks"][1]["log_path"], "/run/gate/rank1.log");
}

TEST(LaunchPlan, IsStoredAsJson) {
  PlanInputs in = make_inputs();
  auto plan = plan_launch(make_config("builtin", 1), in);
  ASSERT_TRUE(plan);
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("bigmac-plan-" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(write_plan(*plan, file));
  std::ifstream in_file(file);
  const nlohmann::json back = nlohmann::json::parse(in_file);
  std::filesystem::remove(file);
  EXPECT_EQ(back, to_json(*plan));
}

TEST(LaunchPlan, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(quote_for_display("--log-file=/a/b.log"), "--log-file=/a/b.log");
  EXPECT_EQ(quote_for_display(""), "''");
  EXPECT_EQ(quote_for_display("it's"), "'it'\\''s'");
}

TEST(Substitute, LeavesUnknownPlaceholders) {
  EXPECT_EQ(substitute("{rank}-{pp}-{rank}", {{"rank", "3"}}), "3-{pp}-3");
}

}  // namespace
}  // namespace bigmac::launch
