#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace bigmac::proc {

/// A process with a socket bound to the probed port, found through /proc/net/tcp{,6}.
struct PortHolder {
  pid_t pid = 0;
  std::string command_line;
  std::string socket_state;  ///< "LISTEN"
};

/// Whether a TCP port can be bound now, and if not, by whom it is held.
struct PortProbe {
  int port = 0;
  bool free = true;
  std::string bind_error;           ///< strerror of the failed bind; empty when free
  std::vector<PortHolder> holders;  ///< empty when free, or when the holder is not visible to us
};

/// Tries to bind `port` on all IPv4 interfaces (with SO_REUSEADDR, as c10d's TCPStore does, so a
/// TIME_WAIT leftover does not count as taken) and, when that fails, looks up the holders.
PortProbe probe_port(int port);

/// A port the kernel hands out as free now (bind to port 0, as torchrun --standalone picks its
/// rendezvous port); 0 when no socket could be bound. Free when asked, not reserved: claim it.
/// It lies in the ephemeral range, where any outgoing connection on the machine may be handed it
/// as its local end before a listener binds it: for a port to listen on later, see
/// free_listen_port().
int ephemeral_port();

/// The kernel's range for the local end of outgoing connections
/// (/proc/sys/net/ipv4/ip_local_port_range); 32768..60999, Linux's default, when unreadable.
struct PortRange {
  int low = 32768;
  int high = 60999;
};
PortRange ephemeral_range();

/// Where free_listen_port() looks: ports from kListenPortFloor up to the ephemeral range, and
/// above it when the range leaves room; the whole non-privileged range when it leaves none.
inline constexpr int kListenPortFloor = 20000;

/// A port free now (probe_port) outside the ephemeral range, started from a random place so that
/// concurrent callers spread out; 0 when none of `tries` candidates is free. A rendezvous port is
/// picked once and bound by the ranks seconds later, several times over a run: an ephemeral pick
/// can be taken meanwhile by any connect() on the machine (a store client, an RPC of Slurm), and
/// the store then fails with "address already in use". Free when asked, not reserved: claim it.
/// `start` (a candidate port) fixes where the search begins, for tests; 0 picks it at random.
int free_listen_port(int tries = 64, int start = 0);

/// Processes owning a listening socket on local port `port`, from /proc/net/tcp and
/// /proc/net/tcp6 inodes matched against /proc/<pid>/fd links. A socket that is bound but neither
/// listening nor connected does not appear in those tables, so its holder stays unknown.
std::vector<PortHolder> port_holders(int port);

/// Processes with a descriptor of one of these sockets (inode -> the state to report), found
/// through the /proc/<pid>/fd links this user may read.
std::vector<PortHolder> socket_holders(const std::map<unsigned long, std::string>& inodes);

}  // namespace bigmac::proc
