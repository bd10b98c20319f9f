#include "proc/port_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "proc/fd.h"
#include "proc/process_table.h"

namespace bigmac::proc {
namespace {

const char* tcp_state_name(int state) {
  switch (state) {
    case 0x01:
      return "ESTABLISHED";
    case 0x06:
      return "TIME_WAIT";
    case 0x07:
      return "CLOSE";
    case 0x0A:
      return "LISTEN";
    default:
      return "OTHER";
  }
}

// inode -> state of every socket bound to `port`, listening or bound sockets first.
std::map<unsigned long, int> socket_inodes(int port) {
  std::map<unsigned long, int> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state_hex, queues, timer, retransmits, uid, timeout;
      unsigned long inode = 0;
      if (!(row >> slot >> local >> remote >> state_hex >> queues >> timer >> retransmits >> uid >>
            timeout >> inode)) {
        continue;
      }
      std::size_t colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      long local_port = std::strtol(local.c_str() + colon + 1, nullptr, 16);
      int state = static_cast<int>(std::strtol(state_hex.c_str(), nullptr, 16));
      if (local_port != port || inode == 0) continue;
      if (state == 0x0A || state == 0x07) inodes[inode] = state;
    }
  }
  return inodes;
}

}  // namespace

std::vector<PortHolder> port_holders(int port) {
  std::map<unsigned long, int> inodes = socket_inodes(port);
  std::vector<PortHolder> holders;
  if (inodes.empty()) return holders;
  std::error_code ec;
  for (const auto& proc_entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = proc_entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    // Other users' fd folders are unreadable; those holders stay unknown.
    for (const auto& fd_entry :
         std::filesystem::directory_iterator(proc_entry.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = std::filesystem::read_symlink(fd_entry.path(), link_ec).string();
      if (link_ec || target.rfind("socket:[", 0) != 0) continue;
      unsigned long inode = std::strtoul(target.c_str() + 8, nullptr, 10);
      auto it = inodes.find(inode);
      if (it == inodes.end()) continue;
      PortHolder holder;
      holder.pid = static_cast<pid_t>(std::atol(name.c_str()));
      holder.command_line = command_line_of(holder.pid);
      holder.socket_state = tcp_state_name(it->second);
      holders.push_back(std::move(holder));
      break;  // one entry per process is enough
    }
  }
  return holders;
}

PortProbe probe_port(int port) {
  PortProbe probe;
  probe.port = port;
  Fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) {
    probe.free = false;
    probe.bind_error = std::strerror(errno);
    return probe;
  }
  int one = 1;
  ::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    probe.free = false;
    probe.bind_error = std::strerror(errno);
    probe.holders = port_holders(port);
  }
  return probe;
}

}  // namespace bigmac::proc
