#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/clock.h"

namespace bigmac::launch {

/// What a rank showed: any line of output, or a typed log event that means more.
enum class ProgressKind { kOutput, kPgReady, kStep, kHeartbeat, kLayout };

/// One piece of evidence that a rank is alive, as the log parser saw it.
struct ProgressEvent {
  int rank = 0;
  Clock::time_point time;
  ProgressKind kind = ProgressKind::kOutput;
  std::optional<std::int64_t> global_step;  ///< kStep, kHeartbeat
  std::optional<double> loss;               ///< kStep
  std::optional<int> stage;                 ///< kLayout
};

/// The limits of launch.init_timeout_s / launch.stall_timeout_s, as durations.
struct WatchdogLimits {
  Clock::duration init_timeout = std::chrono::seconds(60);   ///< silence allowed before pg_ready
  Clock::duration stall_timeout = std::chrono::seconds(60);  ///< silence allowed after it
  bool stop_on_non_finite = true;  ///< false: record a non-finite loss but let the gate run on
};

/// A rank that was silent past its limit: who, where, and for how long.
struct Stall {
  int rank = 0;
  bool before_rendezvous = true;  ///< no pg_ready, step or heartbeat seen yet
  std::optional<std::int64_t> last_step;
  std::optional<int> stage;
  Clock::duration silent_for{};
  Clock::duration limit{};

  /// "rank 1 stalled after step 3 (stage 1): no progress for 12.0 s (limit 10.0 s)".
  std::string describe() const;
};

/// The first non-finite loss: the gate stops at this step.
struct NonFiniteLoss {
  int rank = 0;
  std::int64_t global_step = 0;
  double loss = 0;

  /// "rank 0 logged loss nan at step 7".
  std::string describe() const;
};

/// What the watchdog concluded at one instant.
struct WatchdogVerdict {
  std::vector<Stall> stalls;  ///< longest silence first
  std::optional<NonFiniteLoss> non_finite;
  bool stop = false;  ///< the gate should be stopped now
};

/// Per-rank liveness (torch.distributed.elastic's monitor step, without the processes): fed with
/// observations and exits, asked for a verdict at a time. Pure: no clock, no I/O.
class Watchdog {
 public:
  struct RankState {
    Clock::time_point last_progress;
    bool rendezvous_done = false;
    bool exited = false;
    std::optional<std::int64_t> last_step;
    std::optional<int> stage;
  };

  Watchdog(const std::vector<int>& ranks, WatchdogLimits limits, Clock::time_point start);

  /// Records progress. Observations of ranks not in the plan are ignored.
  void observe(const ProgressEvent& observation);
  /// An exited rank can no longer stall.
  void rank_exited(int rank);

  WatchdogVerdict check(Clock::time_point now) const;
  /// The earliest time at which a running rank becomes stalled unless it shows progress;
  /// time_point::max() when nothing runs.
  Clock::time_point next_deadline() const;

  const std::map<int, RankState>& ranks() const { return ranks_; }

 private:
  Clock::duration limit_for(const RankState& state) const;

  WatchdogLimits limits_;
  std::map<int, RankState> ranks_;
  std::optional<NonFiniteLoss> non_finite_;
};

}  // namespace bigmac::launch
