// bigmac-rank-env's translations, one test each: an srun task that is one rank, an srun task
// per node that starts a torchrun agent, and a torchrun worker. The SLURM_* values are those
// srun 22.05 gave task 3 of `srun --nodes=2 --ntasks-per-node=2` on the local test cluster.

#include "launch/task_environment.h"

#include <gtest/gtest.h>

#include <map>

namespace bigmac::launch {
namespace {

using Env = std::map<std::string, std::string>;

EnvLookup lookup(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

/// Resolves names the way a cluster's DNS would; records what it was asked.
struct FakeResolver {
  std::vector<std::string> asked;
  AddressResolver get() {
    return [this](const std::string& node) -> Expected<std::string> {
      asked.push_back(node);
      if (node == "n1") return std::string("10.1.0.1");
      return tl::unexpected(make_error(ErrorKind::kInfrastructure, "no address for " + node));
    };
  }
};

const Env kSrunTask3 = {{"SLURM_PROCID", "3"},
                        {"SLURM_LOCALID", "1"},
                        {"SLURM_NODEID", "1"},
                        {"SLURM_NTASKS", "4"},
                        {"SLURM_STEP_NUM_TASKS", "4"},
                        {"SLURM_STEP_NUM_NODES", "2"},
                        {"SLURM_NNODES", "2"},
                        {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                        {"SLURM_STEP_NODELIST", "n[1-2]"},
                        {"SLURM_JOB_NODELIST", "n[1-2]"},
                        {"SLURMD_NODENAME", "n2"},
                        {"SLURM_JOB_ID", "12"},
                        {"SLURM_STEP_ID", "0"}};

TaskRequest request(TaskSource from, std::vector<std::string> argv) {
  TaskRequest r;
  r.from = from;
  r.master_port = 29510;
  r.argv = std::move(argv);
  return r;
}

TEST(TaskEnvironment, SlurmTaskGetsTorchrunsWorkerEnvironment) {
  FakeResolver resolver;
  auto exec = plan_task_exec(
      request(TaskSource::kSlurm, {"bigmac-train", "--log-file", "/runs/rank{rank}.log"}),
      lookup(kSrunTask3), resolver.get(), "vm", 77);
  ASSERT_TRUE(exec) << exec.error().format();
  const Env expected = {{"RANK", "3"},
                        {"LOCAL_RANK", "1"},
                        {"WORLD_SIZE", "4"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"GROUP_RANK", "1"},
                        {"GROUP_WORLD_SIZE", "2"},
                        {"ROLE_RANK", "3"},
                        {"ROLE_WORLD_SIZE", "4"},
                        {"MASTER_ADDR", "10.1.0.1"},
                        {"MASTER_PORT", "29510"}};
  EXPECT_EQ(exec->env, expected);
  // The master is the first node of the step, resolved.
  EXPECT_EQ(resolver.asked, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(exec->argv,
            (std::vector<std::string>{"bigmac-train", "--log-file", "/runs/rank3.log"}));
  ASSERT_TRUE(exec->placement);
  EXPECT_EQ(exec->placement->rank, 3);
  EXPECT_EQ(exec->placement->node, "n2");
  EXPECT_EQ(exec->placement->node_rank, 1);
  EXPECT_EQ(exec->placement->job_step, "12.0");
  EXPECT_EQ(exec->placement->parent, 77);
  EXPECT_TRUE(exec->stdout_path.empty());
}

TEST(TaskEnvironment, SlurmTaskUsesAnExplicitMasterAddressAsGiven) {
  FakeResolver resolver;
  TaskRequest r = request(TaskSource::kSlurm, {"trainer"});
  r.master_addr = "192.168.7.1";
  auto exec = plan_task_exec(r, lookup(kSrunTask3), resolver.get(), "vm", 1);
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->env.at("MASTER_ADDR"), "192.168.7.1");
  EXPECT_TRUE(resolver.asked.empty());
}

TEST(TaskEnvironment, SlurmTaskErrorsNameTheVariable) {
  FakeResolver resolver;
  Env env = kSrunTask3;
  env.erase("SLURM_PROCID");
  auto missing =
      plan_task_exec(request(TaskSource::kSlurm, {"t"}), lookup(env), resolver.get(), "vm", 1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().key, "SLURM_PROCID");

  env = kSrunTask3;
  env["SLURM_LOCALID"] = "one";
  auto bad =
      plan_task_exec(request(TaskSource::kSlurm, {"t"}), lookup(env), resolver.get(), "vm", 1);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"one\""), std::string::npos);

  env = kSrunTask3;
  env["SLURM_STEP_NODELIST"] = "n[2-3]";
  env["SLURM_JOB_NODELIST"] = "n[2-3]";
  auto unresolvable =
      plan_task_exec(request(TaskSource::kSlurm, {"t"}), lookup(env), resolver.get(), "vm", 1);
  ASSERT_FALSE(unresolvable);
  EXPECT_NE(unresolvable.error().message.find("n2"), std::string::npos);
}

TEST(TaskEnvironment, SlurmNodeTaskFillsInTheTorchrunAgentsNodeAndEndpoint) {
  FakeResolver resolver;
  Env env = kSrunTask3;
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "0";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  auto exec = plan_task_exec(
      request(TaskSource::kSlurmNode,
              {"torchrun", "--nnodes", "{nnodes}", "--node_rank", "{node_rank}", "--rdzv_endpoint",
               "{master_addr}:{master_port}", "--log_dir", "/r/n{node_rank}", "worker", "{rank}"}),
      lookup(env), resolver.get(), "vm", 1);
  ASSERT_TRUE(exec) << exec.error().format();
  EXPECT_EQ(exec->argv, (std::vector<std::string>{"torchrun", "--nnodes", "2", "--node_rank", "1",
                                                  "--rdzv_endpoint", "10.1.0.1:29510", "--log_dir",
                                                  "/r/n1", "worker", "{rank}"}));
  EXPECT_EQ(exec->env,
            (Env{{"MASTER_ADDR", "10.1.0.1"}, {"MASTER_PORT", "29510"}, {"NODE_RANK", "1"}}));
  EXPECT_FALSE(exec->placement);  // the agent is no rank; its workers say where they run
}

TEST(TaskEnvironment, TorchrunWorkerWritesItsOutputToFilesOfItsOwn) {
  FakeResolver resolver;
  const Env env = {{"RANK", "2"},         {"LOCAL_RANK", "0"},       {"GROUP_RANK", "1"},
                   {"WORLD_SIZE", "4"},   {"SLURMD_NODENAME", "n2"}, {"SLURM_JOB_ID", "12"},
                   {"SLURM_STEP_ID", "0"}};
  TaskRequest r =
      request(TaskSource::kTorchrun, {"bigmac-train", "--log-file", "/r/rank{rank}.log"});
  r.output_dir = "/r";
  auto exec = plan_task_exec(r, lookup(env), resolver.get(), "vm", 4321);
  ASSERT_TRUE(exec) << exec.error().format();
  EXPECT_TRUE(exec->env.empty());  // torchrun's agent already set RANK and the rest
  EXPECT_EQ(exec->argv, (std::vector<std::string>{"bigmac-train", "--log-file", "/r/rank2.log"}));
  EXPECT_EQ(exec->stdout_path, "/r/rank2.stdout");
  EXPECT_EQ(exec->stderr_path, "/r/rank2.stderr");
  ASSERT_TRUE(exec->placement);
  EXPECT_EQ(exec->placement->node, "n2");
  EXPECT_EQ(exec->placement->node_rank, 1);
  EXPECT_EQ(exec->placement->parent, 4321);
  EXPECT_TRUE(resolver.asked.empty());
}

TEST(TaskEnvironment, TorchrunWorkerOnOneHostNamesTheHost) {
  FakeResolver resolver;
  const Env env = {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"GROUP_RANK", "0"}};
  auto exec =
      plan_task_exec(request(TaskSource::kTorchrun, {"t"}), lookup(env), resolver.get(), "vm", 9);
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->placement->node, "vm");
  EXPECT_EQ(exec->placement->job_step, "");
}

TEST(TaskEnvironment, ParsesTheWrapperCommandLine) {
  auto r = parse_task_request({"--from", "slurm-node", "--master-port", "29500", "--output", "/r",
                               "--scontrol", "/usr/bin/scontrol", "--", "torchrun", "--", "x"});
  ASSERT_TRUE(r) << r.error().format();
  EXPECT_EQ(r->from, TaskSource::kSlurmNode);
  EXPECT_EQ(r->master_port, 29500);
  EXPECT_EQ(r->output_dir, "/r");
  EXPECT_EQ(r->scontrol, "/usr/bin/scontrol");
  EXPECT_EQ(r->argv, (std::vector<std::string>{"torchrun", "--", "x"}));

  EXPECT_FALSE(parse_task_request({"--from", "mpi", "--", "x"}));
  EXPECT_FALSE(parse_task_request({"--from", "slurm"}));
  EXPECT_FALSE(parse_task_request({"--", "x"}));
  EXPECT_FALSE(parse_task_request({"--from", "slurm", "--master-port", "0", "--", "x"}));
  auto unknown = parse_task_request({"--from", "slurm", "--frob", "1", "--", "x"});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--frob"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::launch
