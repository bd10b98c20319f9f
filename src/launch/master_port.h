#pragma once

#include <string>

#include "config/config.h"
#include "core/error.h"
#include "proc/port_claim.h"

namespace bigmac::launch {

/// The master port a gate launches with, claimed against other bigmac-bringup runs on this
/// machine from before preflight until the gate's ranks are gone (as long as this value lives):
/// two runs in different directories never both pass preflight on one port and then collide.
struct MasterPort {
  proc::PortClaim claim;  ///< not held for one process, nor under slurm
  int port = 0;
  std::string note;  ///< why another port than launch.master_port is used; empty when it is not
};

/// How many ports above launch.master_port `pick_free_port` tries.
inline constexpr int kFreePortSearch = 100;
/// The port under slurm when launch.master_port is 0 (auto): the master is another node, whose
/// free ports this machine cannot ask; its preflight checks this one there.
inline constexpr int kSlurmDefaultPort = 29500;

/// Claims launch.master_port (nothing to claim for one process, or under slurm, where the master
/// is the allocation's first node). When another run holds it: an infrastructure error naming that
/// run's process — unless launch.pick_free_port, then the first port above it (up to
/// kFreePortSearch higher) that no run claims and no process has bound is used, and `note` says
/// so. A port bound by some other program is left to preflight, which names the holder.
/// launch.master_port = 0 (the default) picks a free port outside the kernel's ephemeral range
/// (proc::free_listen_port: no outgoing connection can take it meanwhile) and claims it, for
/// every gate that may form a group, one process included (a one-rank torchrun gate needs one
/// too); under slurm it is kSlurmDefaultPort.
Expected<MasterPort> reserve_master_port(const config::LaunchConfig& launch);

}  // namespace bigmac::launch
