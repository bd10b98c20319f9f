#include "launch/line_clock.h"

#include <algorithm>
#include <cmath>

namespace bigmac::launch {

Clock::time_point LineClock::place(int rank, double t, Clock::time_point read, double read_wall) {
  if (t <= 0 || !std::isfinite(t)) return read;
  const double delay = read_wall - t;
  auto [it, inserted] = least_delay_.emplace(rank, delay);
  if (!inserted) it->second = std::min(it->second, delay);
  // How much longer ago than the rank's quickest line this one was written.
  const double age = delay - it->second;
  return read - duration_of_seconds(age);
}

}  // namespace bigmac::launch
