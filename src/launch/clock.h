#pragma once

#include <chrono>

namespace bigmac::launch {

/// Where the watchdog and the run loop read the time, so tests can drive time by hand
/// (tests/testing/fake_clock.h) instead of sleeping.
class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  /// The same instant as now() on the wall clock, in seconds since the Unix epoch: what log
  /// lines carry as their `t`.
  virtual double wall_seconds() const = 0;
};

/// The monotonic clock of the machine.
class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  double wall_seconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

/// Seconds as a double, for messages and reports.
inline double seconds_of(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// A double number of seconds as a Clock duration (config values are seconds).
inline Clock::duration duration_of_seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace bigmac::launch
