#include "launch/master_port.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc/pipe.h"
#include "testing/rank_harness.h"

namespace bigmac::launch {
namespace {

config::LaunchConfig launch_on(int port) {
  config::LaunchConfig c;
  c.master_port = port;
  c.nproc_per_node = 2;
  return c;
}

TEST(MasterPort, AFreePortIsClaimedAsConfigured) {
  const int port = testing::free_port();
  auto reserved = reserve_master_port(launch_on(port));
  ASSERT_TRUE(reserved) << reserved.error().format();
  EXPECT_EQ(reserved->port, port);
  EXPECT_TRUE(reserved->claim.held());
  EXPECT_TRUE(reserved->note.empty());
}

TEST(MasterPort, APortAnotherRunClaimedIsAnInfrastructureErrorNamingIt) {
  const int port = testing::free_port();
  auto first = reserve_master_port(launch_on(port));
  ASSERT_TRUE(first);
  auto second = reserve_master_port(launch_on(port));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, ErrorKind::kInfrastructure);
  EXPECT_EQ(second.error().key, "launch.master_port");
  EXPECT_NE(second.error().message.find("master port " + std::to_string(port) +
                                        " is taken by another bigmac-bringup run"),
            std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().hint.find("launch.pick_free_port"), std::string::npos);
}

TEST(MasterPort, PickFreePortMovesToTheNextFreeOneAndSaysSo) {
  const int port = testing::free_port();
  auto first = reserve_master_port(launch_on(port));
  ASSERT_TRUE(first);
  config::LaunchConfig c = launch_on(port);
  c.pick_free_port = true;
  auto second = reserve_master_port(c);
  ASSERT_TRUE(second) << second.error().format();
  EXPECT_GT(second->port, port);
  EXPECT_LE(second->port, port + kFreePortSearch);
  EXPECT_TRUE(second->claim.held());
  EXPECT_NE(second->note.find("using " + std::to_string(second->port)), std::string::npos)
      << second->note;
}

TEST(MasterPort, PickFreePortAlsoLeavesAPortSomeProgramHasBound) {
  proc::Fd listener;
  const int port = testing::free_port();
  {
    // Someone else's server on the port: not a bigmac-bringup run, so no claim.
    listener.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener.get(), 1), 0);
  }
  {
    auto strict = reserve_master_port(launch_on(port));
    ASSERT_TRUE(strict) << "a bound port is preflight's to report, with its holder";
    EXPECT_EQ(strict->port, port);
  }

  config::LaunchConfig c = launch_on(port);
  c.pick_free_port = true;
  auto moved = reserve_master_port(c);
  ASSERT_TRUE(moved) << moved.error().format();
  EXPECT_NE(moved->port, port);
  EXPECT_NE(moved->note.find("is in use"), std::string::npos) << moved->note;
}

TEST(MasterPort, OneProcessOrSlurmClaimsNothingHere) {
  config::LaunchConfig c = launch_on(testing::free_port());
  c.launcher = "slurm";
  auto reserved = reserve_master_port(c);
  ASSERT_TRUE(reserved);
  EXPECT_FALSE(reserved->claim.held());
  EXPECT_EQ(reserved->port, c.master_port);
  c.launcher = "builtin";
  c.nproc_per_node = 1;
  reserved = reserve_master_port(c);
  ASSERT_TRUE(reserved);
  EXPECT_FALSE(reserved->claim.held());
}

TEST(MasterPort, UnsetPortIsAFreeOneClaimedForEveryGateOneProcessIncluded) {
  for (int nproc : {1, 2}) {
    config::LaunchConfig c = launch_on(0);
    c.nproc_per_node = nproc;
    auto first = reserve_master_port(c);
    ASSERT_TRUE(first) << first.error().format();
    EXPECT_GT(first->port, 0);
    EXPECT_TRUE(first->claim.held()) << "a one-rank torchrun gate binds a port too";
    EXPECT_TRUE(first->note.empty()) << first->note;
    // A second run beside it gets another port, never the claimed one.
    auto second = reserve_master_port(c);
    ASSERT_TRUE(second) << second.error().format();
    EXPECT_NE(second->port, first->port);
  }
}

TEST(MasterPort, UnsetPortUnderSlurmIsTheDefaultOneTheFirstNodeChecks) {
  config::LaunchConfig c = launch_on(0);
  c.launcher = "slurm";
  auto reserved = reserve_master_port(c);
  ASSERT_TRUE(reserved);
  EXPECT_EQ(reserved->port, kSlurmDefaultPort);
}

}  // namespace
}  // namespace bigmac::launch
