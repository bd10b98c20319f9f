#include "launch/slurm_query.h"

#include <gtest/gtest.h>

#include <map>

namespace bigmac::launch {
namespace {

TEST(SlurmQuery, ParsesSinfoNodeLines) {
  // `sinfo -h -N -o "%N|%P|%t|%c|%G"` of the local test cluster, plus typical GPU lines.
  auto nodes = parse_sinfo_nodes(
      "n1|debug*|idle|4|(null)\n"
      "n2|debug*|down*|4|(null)\n"
      "g1|gpu|mix|64|gpu:a100:8(S:0-1)\n");
  ASSERT_TRUE(nodes) << nodes.error().format();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].name, "n1");
  EXPECT_EQ((*nodes)[0].partition, "debug");
  EXPECT_TRUE((*nodes)[0].default_partition);
  EXPECT_TRUE((*nodes)[0].usable());
  EXPECT_FALSE((*nodes)[1].usable());
  EXPECT_EQ((*nodes)[2].cpus, 64);
  EXPECT_EQ((*nodes)[2].gpus, 8);
  EXPECT_TRUE((*nodes)[2].usable());
  EXPECT_FALSE(parse_sinfo_nodes("n1 debug idle 4\n"));
}

TEST(SlurmQuery, UnusableStatesAreDownDrainedOrNotResponding) {
  for (const char* state : {"down", "drain", "drng", "fail", "unk*", "idle*", "maint"}) {
    SlurmNode n;
    n.state = state;
    EXPECT_FALSE(n.usable()) << state;
  }
  for (const char* state : {"idle", "alloc", "mix", "comp"}) {
    SlurmNode n;
    n.state = state;
    EXPECT_TRUE(n.usable()) << state;
  }
}

TEST(SlurmQuery, CountsGpusInGres) {
  EXPECT_EQ(gpus_in_gres("gpu:4"), 4);
  EXPECT_EQ(gpus_in_gres("gpu:a100:4(S:0-1)"), 4);
  EXPECT_EQ(gpus_in_gres("gpu:2,shard:8"), 2);
  EXPECT_EQ(gpus_in_gres("(null)"), 0);
}

TEST(SlurmQuery, FindsNodeAddrInScontrolOutput) {
  EXPECT_EQ(parse_node_addr("NodeName=n1 Arch=x86_64 CoresPerSocket=1 NodeAddr=127.0.0.1 "
                            "NodeHostName=vm Version=22.05.8"),
            "127.0.0.1");
  EXPECT_EQ(parse_node_addr("NodeName=n1 State=IDLE"), "");
  const auto addrs = parse_node_addrs(
      "NodeName=n1 Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=vm\n"
      "NodeName=n2 Arch=x86_64 NodeAddr=10.0.0.2 NodeHostName=vm\n");
  EXPECT_EQ(addrs, (std::map<std::string, std::string>{{"n1", "127.0.0.1"}, {"n2", "10.0.0.2"}}));
}

TEST(SlurmQuery, ReadsTheAllocationFromTheEnvironment) {
  std::map<std::string, std::string> env;
  EnvLookup getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto none = read_allocation(getenv);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  env = {{"SLURM_JOB_ID", "12"},
         {"SLURM_JOB_NODELIST", "n[1-2]"},
         {"SLURM_JOB_CPUS_PER_NODE", "4(x2)"}};
  auto some = read_allocation(getenv);
  ASSERT_TRUE(some && *some);
  EXPECT_EQ((*some)->job_id, "12");
  EXPECT_EQ((*some)->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ((*some)->cpus_per_node, (std::vector<int>{4, 4}));
  env["SLURM_JOB_NODELIST"] = "n[1-";
  auto bad = read_allocation(getenv);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().key, "SLURM_JOB_NODELIST");
}

TEST(SlurmQuery, LocalAddressesAreThisHosts) {
  EXPECT_TRUE(is_local_address("127.0.0.1"));
  EXPECT_FALSE(is_local_address("192.0.2.1"));  // TEST-NET-1, never assigned to a host
  EXPECT_FALSE(is_local_address("not-an-address"));
  EXPECT_EQ(resolve_host("127.0.0.1"), "127.0.0.1");
}

}  // namespace
}  // namespace bigmac::launch
