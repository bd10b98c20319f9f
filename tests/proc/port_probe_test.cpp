#include "proc/port_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "proc/pipe.h"

namespace bigmac::proc {
namespace {

// Binds an ephemeral port on 127.0.0.1; listens when asked. Returns the port.
int bind_ephemeral(Fd& sock, bool listen_too) {
  sock.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  if (listen_too) {
    EXPECT_EQ(::listen(sock.get(), 1), 0);
  }
  socklen_t len = sizeof addr;
  ::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

TEST(PortProbe, ListeningPortIsTakenAndNamesThisProcess) {
  Fd sock;
  int port = bind_ephemeral(sock, true);
  PortProbe probe = probe_port(port);
  EXPECT_FALSE(probe.free);
  EXPECT_FALSE(probe.bind_error.empty());
  ASSERT_EQ(probe.holders.size(), 1u);
  EXPECT_EQ(probe.holders[0].pid, ::getpid());
  EXPECT_EQ(probe.holders[0].socket_state, "LISTEN");
  EXPECT_NE(probe.holders[0].command_line.find("bigmac_proc_tests"), std::string::npos);
}

TEST(PortProbe, BoundButNotListeningIsTakenThoughNoHolderIsListed) {
  // /proc/net/tcp lists listening and connected sockets only, so a bare bind has no holder.
  Fd sock;
  int port = bind_ephemeral(sock, false);
  PortProbe probe = probe_port(port);
  EXPECT_FALSE(probe.free);
  EXPECT_TRUE(probe.holders.empty());
}

TEST(PortProbe, ReleasedPortIsFree) {
  int port = 0;
  {
    Fd sock;
    port = bind_ephemeral(sock, true);
  }
  // Another program could grab the port in between; that is rare enough and would show as a
  // holder other than us, not as a silent pass.
  PortProbe probe = probe_port(port);
  EXPECT_TRUE(probe.free) << probe.bind_error;
  EXPECT_TRUE(probe.holders.empty());
}

TEST(PortProbe, AListenPortIsFreeAndOutsideTheEphemeralRange) {
  // Ports in that range are handed to outgoing connections: one picked there could be taken
  // before the rendezvous store binds it.
  const PortRange ephemeral = ephemeral_range();
  ASSERT_LE(ephemeral.low, ephemeral.high);
  for (int i = 0; i < 20; ++i) {
    const int port = free_listen_port();
    ASSERT_GT(port, 0);
    EXPECT_TRUE(port < ephemeral.low || port > ephemeral.high)
        << port << " in " << ephemeral.low << ".." << ephemeral.high;
    EXPECT_GE(port, ephemeral.low > kListenPortFloor ? kListenPortFloor : 1024);
  }
}

TEST(PortProbe, AListenPortSkipsOneThatIsTaken) {
  const int held_port = free_listen_port();
  ASSERT_GT(held_port, 0);
  Fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(held_port));
  ASSERT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(sock.get(), 1), 0);
  // The search starts at the held port and moves on to the next free candidate.
  const int next = free_listen_port(64, held_port);
  EXPECT_GT(next, 0);
  EXPECT_NE(next, held_port);
  EXPECT_EQ(free_listen_port(1, held_port), 0) << "one try, at a taken port: nothing free";
}

}  // namespace
}  // namespace bigmac::proc
