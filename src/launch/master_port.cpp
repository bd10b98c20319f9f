#include "launch/master_port.h"

#include <fmt/format.h>

#include <algorithm>

#include "proc/port_probe.h"

namespace bigmac::launch {
namespace {

std::string holders_text(const std::vector<proc::PortHolder>& holders) {
  std::string who;
  for (const proc::PortHolder& h : holders) {
    who += fmt::format("{}pid {} ({})", who.empty() ? "" : ", ", h.pid, h.command_line);
  }
  return who.empty() ? "a process this user cannot see" : who;
}

Error port_error(std::string message, std::string hint) {
  Error e = make_error(ErrorKind::kInfrastructure, std::move(message), std::move(hint));
  e.key = "launch.master_port";
  return e;
}

// launch.master_port = 0: a port free when asked, outside the kernel's ephemeral range so that no
// outgoing connection takes it before the store binds it; the claim keeps other runs of this tool
// off it until the gate's ranks are gone.
Expected<MasterPort> reserve_free_port() {
  constexpr int kTries = 20;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const int port = proc::free_listen_port();
    if (port == 0) break;
    auto claim = proc::PortClaim::try_claim(port);
    if (!claim || !proc::probe_port(port).free) continue;
    MasterPort out;
    out.claim = std::move(*claim);
    out.port = port;
    return out;
  }
  return tl::unexpected(port_error(
      fmt::format("no free TCP port for the rendezvous: none below or above the kernel's ephemeral "
                  "range could be claimed in {} tries",
                  kTries),
      "set launch.master_port to a port you know is free"));
}

Expected<MasterPort> reserve_configured_port(const config::LaunchConfig& launch) {
  MasterPort out;
  out.port = launch.master_port;
  // One process forms no group; under slurm the master is the allocation's first node.
  if (launch.launcher == "slurm" || launch.world_size() == 1) return out;
  auto claim = proc::PortClaim::try_claim(launch.master_port);
  // A port some other program has bound is preflight's to report, unless we may move on.
  const bool bound = claim && launch.pick_free_port && !proc::probe_port(launch.master_port).free;
  if (claim && !bound) {
    out.claim = std::move(*claim);
    return out;
  }
  const std::string taken =
      bound ? "is in use"
            : fmt::format("is taken by another bigmac-bringup run on this machine: {}",
                          holders_text(proc::claim_holders(launch.master_port)));
  claim.reset();
  if (!launch.pick_free_port) {
    return tl::unexpected(
        port_error(fmt::format("master port {} {}", launch.master_port, taken),
                   "wait for that run, set launch.master_port to another port (0: a free one), "
                   "or set launch.pick_free_port = true to use the next free one"));
  }
  const int last = std::min(65535, launch.master_port + kFreePortSearch);
  for (int port = launch.master_port + 1; port <= last; ++port) {
    auto next = proc::PortClaim::try_claim(port);
    if (!next || !proc::probe_port(port).free) continue;
    out.claim = std::move(*next);
    out.port = port;
    out.note = fmt::format("master port {} {}; using {} (launch.pick_free_port)",
                           launch.master_port, taken, port);
    return out;
  }
  return tl::unexpected(port_error(fmt::format("master port {} {}, and no port up to {} is free",
                                               launch.master_port, taken, last),
                                   "set launch.master_port to a free range, or to 0"));
}

}  // namespace

Expected<MasterPort> reserve_master_port(const config::LaunchConfig& launch) {
  if (launch.master_port != 0) return reserve_configured_port(launch);
  if (launch.launcher.starts_with("slurm")) {
    config::LaunchConfig fixed = launch;
    fixed.master_port = kSlurmDefaultPort;
    return reserve_configured_port(fixed);
  }
  return reserve_free_port();
}

}  // namespace bigmac::launch
