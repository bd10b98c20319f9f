#include "launch/slurm_query.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>

#include "launch/slurm_hostlist.h"
#include "proc/command_output.h"

namespace bigmac::launch {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

std::optional<int> to_int(std::string_view s) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

Error variable_error(std::string_view name, std::string_view text, const Error& why) {
  Error e = make_error(ErrorKind::kInfrastructure,
                       fmt::format("${}=\"{}\": {}", name, text, why.message));
  e.key = std::string(name);
  return e;
}

}  // namespace

Expected<std::optional<SlurmAllocation>> read_allocation(const EnvLookup& getenv) {
  const char* job = getenv("SLURM_JOB_ID");
  if (job == nullptr || *job == '\0') return std::optional<SlurmAllocation>{};
  SlurmAllocation a;
  a.job_id = job;
  const char* nodelist = getenv("SLURM_JOB_NODELIST");
  if (nodelist == nullptr) nodelist = getenv("SLURM_NODELIST");
  if (nodelist != nullptr) {
    auto nodes = expand_hostlist(nodelist);
    if (!nodes)
      return tl::unexpected(variable_error("SLURM_JOB_NODELIST", nodelist, nodes.error()));
    a.nodes = std::move(*nodes);
  }
  if (const char* cpus = getenv("SLURM_JOB_CPUS_PER_NODE"); cpus != nullptr) {
    auto counts = expand_node_counts(cpus);
    if (!counts)
      return tl::unexpected(variable_error("SLURM_JOB_CPUS_PER_NODE", cpus, counts.error()));
    a.cpus_per_node = std::move(*counts);
  }
  return std::optional<SlurmAllocation>(std::move(a));
}

bool SlurmNode::usable() const {
  // sinfo's compact states; '*' (not responding), '~' (powered off), '#', '!', '%' are suffixes
  // of unhealthy or transitional nodes.
  std::string_view s = state;
  if (s.empty() || s.find_first_of("*~#!%") != std::string_view::npos) return false;
  for (std::string_view bad : {"down", "dr", "fail", "unk", "maint", "inval", "boot", "npc", "pow",
                               "resv", "futr", "plnd"}) {
    if (s.starts_with(bad)) return false;
  }
  return true;
}

int gpus_in_gres(std::string_view gres) {
  int total = 0;
  for (std::string_view item : split(gres, ',')) {
    if (!item.starts_with("gpu")) continue;
    if (const std::size_t paren = item.find('('); paren != std::string_view::npos) {
      item = item.substr(0, paren);
    }
    const std::size_t colon = item.rfind(':');
    if (colon == std::string_view::npos) continue;
    total += to_int(item.substr(colon + 1)).value_or(0);
  }
  return total;
}

Expected<std::vector<SlurmNode>> parse_sinfo_nodes(std::string_view text) {
  std::vector<SlurmNode> nodes;
  for (std::string_view line : split(text, '\n')) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto fields = split(line, '|');
    auto cpus = fields.size() == 5 ? to_int(fields[3]) : std::nullopt;
    if (!cpus) {
      return tl::unexpected(make_error(
          ErrorKind::kInfrastructure,
          fmt::format("unexpected sinfo line '{}' (wanted {})", line, kSinfoNodeFormat)));
    }
    SlurmNode n;
    n.name = std::string(fields[0]);
    n.partition = std::string(fields[1]);
    if (!n.partition.empty() && n.partition.back() == '*') {
      n.partition.pop_back();
      n.default_partition = true;
    }
    n.state = std::string(fields[2]);
    n.cpus = *cpus;
    n.gpus = gpus_in_gres(fields[4]);
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::map<std::string, std::string> parse_node_addrs(std::string_view text) {
  std::map<std::string, std::string> addrs;
  for (std::string_view line : split(text, '\n')) {
    std::string name;
    std::string addr;
    for (std::string_view field : split(line, ' ')) {
      if (field.starts_with("NodeName=")) name = std::string(field.substr(9));
      if (field.starts_with("NodeAddr=")) addr = std::string(field.substr(9));
    }
    if (!addr.empty()) addrs[name] = addr;
  }
  return addrs;
}

std::string parse_node_addr(std::string_view text) {
  const auto addrs = parse_node_addrs(text);
  return addrs.empty() ? std::string() : addrs.begin()->second;
}

std::optional<std::string> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) {
    return std::nullopt;
  }
  // IPv4 first, as c10d's TCPStore tries it first too.
  const addrinfo* pick = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  char text[NI_MAXHOST] = {};
  const int rc =
      ::getnameinfo(pick->ai_addr, pick->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  if (rc != 0) return std::nullopt;
  return std::string(text);
}

Expected<std::string> node_address(const std::string& node, const std::string& scontrol) {
  if (auto direct = resolve_host(node)) return *direct;
  auto shown = proc::run_command({scontrol, "show", "node", "-o", node}, std::chrono::seconds(30));
  std::string why;
  if (!shown) {
    why = shown.error().message;
  } else if (!shown->ok()) {
    why = fmt::format("`{} show node -o {}` failed: {}", scontrol, node, shown->first_line());
  } else {
    const std::string addr = parse_node_addr(shown->out);
    if (addr.empty()) {
      why = fmt::format("`{} show node -o {}` printed no NodeAddr", scontrol, node);
    } else if (auto resolved = resolve_host(addr)) {
      return *resolved;
    } else {
      why = fmt::format("its NodeAddr '{}' does not resolve either", addr);
    }
  }
  return tl::unexpected(make_error(
      ErrorKind::kInfrastructure,
      fmt::format("cannot find the address of node '{}': the name does not resolve and {}", node,
                  why),
      "set launch.master_addr to an address every node can reach"));
}

bool is_local_address(const std::string& address) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return false;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool local = false;
  if (fd >= 0) {
    // Port 0: any free port; binding fails with EADDRNOTAVAIL for another host's address.
    if (found->ai_family == AF_INET) {
      sockaddr_in sa = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
      sa.sin_port = 0;
      local = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
    } else if (found->ai_family == AF_INET6) {
      sockaddr_in6 sa = *reinterpret_cast<const sockaddr_in6*>(found->ai_addr);
      sa.sin6_port = 0;
      local = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return local;
}

}  // namespace bigmac::launch
