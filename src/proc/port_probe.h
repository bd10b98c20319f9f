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
int ephemeral_port();

/// Processes owning a listening socket on local port `port`, from /proc/net/tcp and
/// /proc/net/tcp6 inodes matched against /proc/<pid>/fd links. A socket that is bound but neither
/// listening nor connected does not appear in those tables, so its holder stays unknown.
std::vector<PortHolder> port_holders(int port);

/// Processes with a descriptor of one of these sockets (inode -> the state to report), found
/// through the /proc/<pid>/fd links this user may read.
std::vector<PortHolder> socket_holders(const std::map<unsigned long, std::string>& inodes);

}  // namespace bigmac::proc
