#pragma once

#include <optional>
#include <vector>

#include "proc/pipe.h"
#include "proc/port_probe.h"

namespace bigmac::proc {

/// A machine-wide claim on a TCP port number among bigmac-bringup runs, from preflight until the
/// gate's ranks are gone: a bound abstract Unix socket named after the port (no file to leave
/// behind or to plant a link at). The kernel releases it when its holder exits, however it
/// exits — SIGKILL included. The ranks' own TCP listener cannot take the port over from us (the
/// rendezvous store binds it itself), so the claim is what keeps a second run off the port in
/// between; what is not a bigmac-bringup run is found by probing the port itself.
class PortClaim {
 public:
  PortClaim() = default;
  /// Claims `port`; nullopt when another process holds the claim.
  static std::optional<PortClaim> try_claim(int port);

  int port() const { return port_; }
  bool held() const { return fd_.valid(); }

 private:
  Fd fd_;
  int port_ = 0;
};

/// Processes holding the claim of `port` (from /proc/net/unix and /proc/<pid>/fd); empty when
/// nobody does or the holder is not visible to us.
std::vector<PortHolder> claim_holders(int port);

}  // namespace bigmac::proc
