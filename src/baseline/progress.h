#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "logs/rank_log.h"

namespace bigmac::baseline {

// The judgements of a rank's progress, made once: the gate check `no_idle_stage` (gates/) and
// the diagnosis rule `stage_idle` (diagnose/) both call these with the gate's limit, so a
// rank the check finds idle is one the diagnosis explains (issue 29).

/// The pause between two signs of work a rank may take before it counts as idle, when the gate
/// sets no `idle_limit_s` (stages/05-target.toml).
inline constexpr double kDefaultIdleLimitS = 30.0;

/// A sign that a rank was working: when, and the log line that shows it.
struct WorkSign {
  double t = 0;
  std::int64_t line = 0;
};

/// The timed signs of work of one rank, in time order: heartbeats, steps, and each
/// micro-batch's start and end (its record's time when it logged no end). Untimed records
/// (t <= 0) are left out: they cannot show a pause.
std::vector<WorkSign> signs_of_work(const logs::RankLog& log);

/// A pause between two consecutive signs of work.
struct IdleGap {
  WorkSign before;  ///< the last work before the pause
  WorkSign after;   ///< the first work after it
  double seconds() const { return after.t - before.t; }
};

/// The longest pause between consecutive signs (in time order); nullopt with fewer than two.
std::optional<IdleGap> longest_idle(std::span<const WorkSign> signs);

}  // namespace bigmac::baseline
