#include "proc/port_claim.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testing/rank_harness.h"

namespace bigmac::proc {
namespace {

TEST(PortClaim, OneHolderAtATimeAndTheHolderIsNamed) {
  const int port = testing::free_port();
  auto first = PortClaim::try_claim(port);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->held());
  EXPECT_EQ(first->port(), port);
  EXPECT_FALSE(PortClaim::try_claim(port).has_value()) << "a second claim of the same port";
  EXPECT_TRUE(PortClaim::try_claim(port + 1).has_value()) << "other ports are unaffected";

  const std::vector<PortHolder> holders = claim_holders(port);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, ::getpid());
  EXPECT_NE(holders[0].command_line.find("bigmac_proc_tests"), std::string::npos)
      << holders[0].command_line;

  first.reset();  // released with its descriptor, as when the holder dies
  EXPECT_TRUE(claim_holders(port).empty());
  EXPECT_TRUE(PortClaim::try_claim(port).has_value());
}

}  // namespace
}  // namespace bigmac::proc
