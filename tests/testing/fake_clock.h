#pragma once

#include <chrono>

#include "launch/clock.h"

namespace bigmac::testing {

/// A clock that only moves when a test (or a fake runner) advances it.
class FakeClock final : public launch::Clock {
 public:
  FakeClock() : now_(std::chrono::steady_clock::time_point{} + std::chrono::hours(1)) {}

  time_point now() const override { return now_; }
  /// The wall clock moves with the steady one, from a fixed epoch offset.
  double wall_seconds() const override {
    return kWallAtStart + launch::seconds_of(now_ - (time_point{} + std::chrono::hours(1)));
  }
  static constexpr double kWallAtStart = 1.7e9;
  void advance(duration d) { now_ += d; }
  void advance_seconds(double s) { now_ += launch::duration_of_seconds(s); }

 private:
  time_point now_;
};

}  // namespace bigmac::testing
