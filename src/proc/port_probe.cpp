#include "proc/port_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/checked_integer.h"
#include "proc/pipe.h"
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
      const auto local_port =
          parse_integer(std::string_view(local).substr(colon + 1), 0, 65535, 16);
      const auto state = parse_integer_as<int>(state_hex, 16);
      if (local_port != port || inode == 0 || !state) continue;
      if (*state == 0x0A || *state == 0x07) inodes[inode] = *state;
    }
  }
  return inodes;
}

}  // namespace

std::vector<PortHolder> socket_holders(const std::map<unsigned long, std::string>& inodes) {
  std::vector<PortHolder> holders;
  if (inodes.empty()) return holders;
  for (pid_t pid : all_pids()) {
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    // Other users' fd folders are unreadable; those holders stay unknown.
    DIR* dir = ::opendir(fd_dir.c_str());
    if (dir == nullptr) continue;
    while (const dirent* entry = ::readdir(dir)) {
      char target[64];
      const std::string link = fd_dir + "/" + entry->d_name;
      ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 8) continue;
      target[n] = '\0';
      if (std::strncmp(target, "socket:[", 8) != 0) continue;
      // "socket:[12345]"
      const std::string_view text(target + 8, static_cast<std::size_t>(n) - 9);
      const auto inode = parse_integer_as<std::int64_t>(text);
      if (!inode) continue;
      auto it = inodes.find(static_cast<unsigned long>(*inode));
      if (it == inodes.end()) continue;
      PortHolder holder;
      holder.pid = pid;
      holder.command_line = command_line_of(pid);
      holder.socket_state = it->second;
      holders.push_back(std::move(holder));
      break;  // one entry per process is enough
    }
    ::closedir(dir);
  }
  return holders;
}

std::vector<PortHolder> port_holders(int port) {
  std::map<unsigned long, std::string> states;
  for (const auto& [inode, state] : socket_inodes(port)) states[inode] = tcp_state_name(state);
  return socket_holders(states);
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

int ephemeral_port() {
  Fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t length = sizeof addr;
  if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return 0;
  }
  return ntohs(addr.sin_port);
}

PortRange ephemeral_range() {
  PortRange range;
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  int high = 0;
  if (in >> low >> high && 0 < low && low <= high && high <= 65535) {
    range.low = low;
    range.high = high;
  }
  return range;
}

int free_listen_port(int tries, int start) {
  const PortRange ephemeral = ephemeral_range();
  // Candidates: [floor, low) and (high, 65535]; the first is empty when the range starts low.
  const int floor = ephemeral.low > kListenPortFloor ? kListenPortFloor : 1024;
  const int below = std::max(0, ephemeral.low - floor);
  const int above = 65535 - ephemeral.high;
  const int count = below + above;
  if (count <= 0) return ephemeral_port();
  const auto candidate = [&](int index) {
    return index < below ? floor + index : ephemeral.high + 1 + (index - below);
  };
  int first = 0;
  if (start >= floor && start < ephemeral.low) {
    first = start - floor;
  } else if (start > ephemeral.high && start <= 65535) {
    first = below + (start - ephemeral.high - 1);
  } else {
    std::random_device seed;
    first = std::uniform_int_distribution<int>(0, count - 1)(seed);
  }
  for (int i = 0; i < std::min(tries, count); ++i) {
    const int port = candidate((first + i) % count);
    if (probe_port(port).free) return port;
  }
  return 0;
}

}  // namespace bigmac::proc
