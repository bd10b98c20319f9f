#pragma once

#include <map>

#include "launch/clock.h"

namespace bigmac::launch {

/// Places a log line on the watchdog's clock at the instant the rank logged it (the line's own
/// `t`), not when the orchestrator happened to read it: lines of several ranks read in one poll,
/// or a log file read a moment late, keep their order, and the rank that went silent first is
/// the one that looks silent longest.
///
/// A rank's clock may differ from ours (another node, or a `t` that counts from the rank's own
/// start): the smallest delay seen between a line's `t` and its reading is taken as that rank's
/// offset, so a constant skew cancels out and no line is dated later than its reading.
class LineClock {
 public:
  /// The time on the watchdog's clock at which `rank` logged a line with wall time `t` (0: the
  /// line has none, and `read` is used), read at `read` (steady) = `read_wall` (wall seconds).
  Clock::time_point place(int rank, double t, Clock::time_point read, double read_wall);

 private:
  std::map<int, double> least_delay_;  ///< per rank: min(read_wall - t), seconds
};

}  // namespace bigmac::launch
