#include "launch/watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace bigmac::launch {

std::string Stall::describe() const {
  std::string where = before_rendezvous ? "before rendezvous"
                      : last_step       ? fmt::format("after step {}", *last_step)
                                        : "after rendezvous, before step 0";
  if (stage) where += fmt::format(" (stage {})", *stage);
  return fmt::format("rank {} stalled {}: no progress for {:.1f} s (limit {:.1f} s)", rank, where,
                     seconds_of(silent_for), seconds_of(limit));
}

std::string NonFiniteLoss::describe() const {
  return fmt::format("rank {} logged loss {} at step {}", rank, loss, global_step);
}

Watchdog::Watchdog(const std::vector<int>& ranks, WatchdogLimits limits, Clock::time_point start)
    : limits_(limits) {
  for (int rank : ranks) ranks_[rank].last_progress = start;
}

void Watchdog::observe(const ProgressEvent& o) {
  auto it = ranks_.find(o.rank);
  if (it == ranks_.end()) return;
  RankState& state = it->second;
  state.last_progress = std::max(state.last_progress, o.time);
  switch (o.kind) {
    case ProgressKind::kOutput:
      break;
    case ProgressKind::kPgReady:
      state.rendezvous_done = true;
      break;
    case ProgressKind::kStep:
    case ProgressKind::kHeartbeat:
      // A world of one has no process group and never logs pg_ready; a step means it is past it.
      state.rendezvous_done = true;
      if (o.global_step)
        state.last_step = std::max(state.last_step.value_or(*o.global_step), *o.global_step);
      if (o.kind == ProgressKind::kStep && o.loss && !std::isfinite(*o.loss) && !non_finite_) {
        non_finite_ = NonFiniteLoss{o.rank, o.global_step.value_or(-1), *o.loss};
      }
      break;
    case ProgressKind::kLayout:
      state.stage = o.stage;
      break;
  }
}

void Watchdog::rank_exited(int rank) {
  auto it = ranks_.find(rank);
  if (it != ranks_.end()) it->second.exited = true;
}

Clock::duration Watchdog::limit_for(const RankState& state) const {
  return state.rendezvous_done ? limits_.stall_timeout : limits_.init_timeout;
}

WatchdogVerdict Watchdog::check(Clock::time_point now) const {
  WatchdogVerdict verdict;
  for (const auto& [rank, state] : ranks_) {
    if (state.exited) continue;
    const Clock::duration silent = now - state.last_progress;
    if (silent < limit_for(state)) continue;
    Stall stall;
    stall.rank = rank;
    stall.before_rendezvous = !state.rendezvous_done;
    stall.last_step = state.last_step;
    stall.stage = state.stage;
    stall.silent_for = silent;
    stall.limit = limit_for(state);
    verdict.stalls.push_back(stall);
  }
  std::stable_sort(verdict.stalls.begin(), verdict.stalls.end(),
                   [](const Stall& a, const Stall& b) { return a.silent_for > b.silent_for; });
  verdict.non_finite = non_finite_;
  verdict.stop = !verdict.stalls.empty() || (non_finite_ && limits_.stop_on_non_finite);
  return verdict;
}

Clock::time_point Watchdog::next_deadline() const {
  Clock::time_point earliest = Clock::time_point::max();
  for (const auto& [rank, state] : ranks_) {
    if (!state.exited) earliest = std::min(earliest, state.last_progress + limit_for(state));
  }
  return earliest;
}

}  // namespace bigmac::launch
