#include "proc/signal_name.h"

#include <gtest/gtest.h>

#include <csignal>

namespace bigmac::proc {
namespace {

TEST(SignalName, NamesCommonSignals) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(77), "signal 77");
}

TEST(SignalName, ParsesNamesWithAndWithoutPrefix) {
  EXPECT_EQ(signal_number("SIGTERM"), SIGTERM);
  EXPECT_EQ(signal_number("TERM"), SIGTERM);
  EXPECT_EQ(signal_number("9"), 9);
  EXPECT_FALSE(signal_number("NOPE").has_value());
}

}  // namespace
}  // namespace bigmac::proc
