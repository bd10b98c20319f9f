#include "proc/port_claim.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>

namespace bigmac::proc {
namespace {

// The claim's name in the abstract namespace (a leading NUL; /proc/net/unix shows it as '@').
std::string claim_name(int port) { return "bigmac-bringup/master-port/" + std::to_string(port); }

}  // namespace

std::optional<PortClaim> PortClaim::try_claim(int port) {
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return std::nullopt;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = claim_name(port);
  name.copy(addr.sun_path + 1, sizeof addr.sun_path - 2);
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), length) != 0) {
    return std::nullopt;
  }
  PortClaim claim;
  claim.fd_ = std::move(sock);
  claim.port_ = port;
  return claim;
}

std::vector<PortHolder> claim_holders(int port) {
  const std::string wanted = "@" + claim_name(port);
  std::map<unsigned long, std::string> inodes;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);  // header: Num RefCount Protocol Flags Type St Inode Path
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string num, refs, protocol, flags, type, state, path;
    unsigned long inode = 0;
    if (!(row >> num >> refs >> protocol >> flags >> type >> state >> inode >> path)) continue;
    if (path == wanted) inodes[inode] = "claim";
  }
  return socket_holders(inodes);
}

}  // namespace bigmac::proc
