#include "launch/watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace bigmac::launch {
namespace {

// How far a rank got: before rendezvous < rendezvous < finished step k-1 < began step k <
// finished step k. The rank with the least progress is the one the others wait for.
std::int64_t progress_of(const Watchdog::RankState& s) {
  if (!s.rendezvous_done) return -2;
  std::int64_t p = -1;
  if (s.last_step) p = std::max(p, 2 * *s.last_step + 1);
  if (s.began_step) p = std::max(p, 2 * *s.began_step);
  return p;
}

// The lower median, so that one slow first step among two does not set the pace.
Clock::duration lower_median(std::vector<Clock::duration> times) {
  const auto middle = times.begin() + static_cast<std::ptrdiff_t>((times.size() - 1) / 2);
  std::nth_element(times.begin(), middle, times.end());
  return *middle;
}

}  // namespace

std::string Stall::describe() const {
  std::string where = before_rendezvous ? "before rendezvous"
                      : began_step      ? fmt::format("in step {}", *began_step)
                      : last_step       ? fmt::format("after step {}", *last_step)
                                        : "after rendezvous, before step 0";
  if (stage) where += fmt::format(" (stage {})", *stage);
  std::string text =
      fmt::format("rank {} stalled {}: no progress for {:.1f} s (limit {:.1f} s: {})", rank, where,
                  seconds_of(silent_for), seconds_of(limit), limit_basis);
  if (!collective.empty()) text += "; " + collective;
  if (!stack.empty()) text += "; main thread " + stack;
  return text;
}

std::string NonFiniteLoss::describe() const {
  return fmt::format("rank {} logged loss {} at step {}", rank, loss, global_step);
}

Watchdog::Watchdog(const std::vector<int>& ranks, WatchdogLimits limits, Clock::time_point start)
    : limits_(limits) {
  for (int rank : ranks) ranks_[rank].last_progress = start;
}

void Watchdog::finished_step(RankState& state, const ProgressEvent& o) {
  const std::int64_t step = o.global_step.value_or(state.last_step ? *state.last_step + 1 : 0);
  // The trainer's own measure of a step is the best sample; a rank that logs none (a heartbeat
  // only) is timed from one finished step to the next, the first from rendezvous.
  if (o.kind == ProgressKind::kStep && o.step_ms && *o.step_ms > 0) {
    if (!state.timed_by_trainer) {
      state.step_times.clear();
      state.timed_by_trainer = true;
    }
    if (!state.last_timed_step || step > *state.last_timed_step) {
      state.step_times.push_back(duration_of_seconds(*o.step_ms / 1000));
      state.last_timed_step = step;
    }
  } else if (!state.timed_by_trainer && (!state.last_step || step > *state.last_step)) {
    const std::optional<Clock::time_point> from =
        state.last_finish ? state.last_finish : state.rendezvous_at;
    const double from_wall = state.last_finish ? state.last_finish_wall : state.rendezvous_wall;
    const std::int64_t steps = state.last_step ? step - *state.last_step : 1;
    if (steps > 0 && from_wall > 0 && o.wall > from_wall) {
      state.step_times.push_back(
          duration_of_seconds((o.wall - from_wall) / static_cast<double>(steps)));
    } else if (steps > 0 && from && o.time > *from && (from_wall <= 0 || o.wall <= 0)) {
      state.step_times.push_back((o.time - *from) / steps);
    }
  }
  if (!state.last_step || step >= *state.last_step) {
    state.last_step = step;
    state.last_finish = o.time;
    state.last_finish_wall = o.wall;
  }
  if (state.began_step && *state.began_step <= step) state.began_step.reset();
  state.paused_at.reset();
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
      if (!state.rendezvous_at) {
        state.rendezvous_at = o.time;
        state.rendezvous_wall = o.wall;
      }
      break;
    case ProgressKind::kStep:
    case ProgressKind::kHeartbeat:
      // A world of one has no process group and never logs pg_ready; a step means it is past it.
      state.rendezvous_done = true;
      if (o.kind == ProgressKind::kHeartbeat && o.began) {
        if (o.global_step && (!state.last_step || *o.global_step > *state.last_step))
          state.began_step = o.global_step;
        state.paused_at.reset();
      } else {
        finished_step(state, o);
      }
      if (o.kind == ProgressKind::kStep && o.loss && !std::isfinite(*o.loss) && !non_finite_) {
        non_finite_ = NonFiniteLoss{o.rank, o.global_step.value_or(-1), *o.loss};
      }
      break;
    case ProgressKind::kLayout:
      state.stage = o.stage;
      break;
    case ProgressKind::kPause:
      state.paused_at = o.global_step ? o.global_step : state.last_step.value_or(-1);
      break;
    case ProgressKind::kPauseEnd:
      state.paused_at.reset();
      break;
    case ProgressKind::kDone:
      state.done = true;
      break;
  }
}

void Watchdog::rank_exited(int rank) {
  auto it = ranks_.find(rank);
  if (it != ranks_.end()) it->second.exited = true;
}

SilenceLimit Watchdog::limit_for(const RankState& state) const {
  if (!state.rendezvous_done)
    return {limits_.init_timeout, "init_timeout_s, before the process group formed"};
  if (state.done) {
    // Its steps are over: a step's pace says nothing of how long ending takes.
    return {limits_.stall_timeout, "stall_timeout_s, ending after its done line"};
  }
  if (state.paused_at) {
    return {limits_.stall_timeout,
            fmt::format("stall_timeout_s, while it pauses (eval or checkpoint) at step {}",
                        *state.paused_at)};
  }
  if (limits_.stall_factor <= 0) return {limits_.stall_timeout, "stall_timeout_s"};
  const auto timed = static_cast<int>(state.step_times.size());
  if (timed < std::max(limits_.timed_steps, 1)) {
    return {limits_.stall_timeout,
            fmt::format("stall_timeout_s until {} steps are timed ({} so far)",
                        std::max(limits_.timed_steps, 1), timed)};
  }
  const Clock::duration median = lower_median(state.step_times);
  const auto scaled = std::chrono::duration_cast<Clock::duration>(median * limits_.stall_factor);
  const Clock::duration adaptive = std::max(limits_.stall_min, scaled);
  if (adaptive >= limits_.stall_timeout) {
    return {limits_.stall_timeout,
            fmt::format("stall_timeout_s, the cap: max(stall_min_s {:g} s, {:g} × median step "
                        "{:.3f} s) is longer",
                        seconds_of(limits_.stall_min), limits_.stall_factor, seconds_of(median))};
  }
  return {adaptive,
          fmt::format("max(stall_min_s {:g} s, {:g} × median step {:.3f} s)",
                      seconds_of(limits_.stall_min), limits_.stall_factor, seconds_of(median))};
}

WatchdogVerdict Watchdog::check(Clock::time_point now) const {
  WatchdogVerdict verdict;
  // Stopped when any rank is past its own limit. Then every running rank silent for half that
  // long is listed too: in a collective hang all stop within a step or so of each other (a
  // limit is at least ten steps), and the one that stopped first may have the longer limit or
  // have logged its last line a moment after the others.
  std::optional<Clock::duration> trigger;
  for (const auto& [rank, state] : ranks_) {
    if (state.exited) continue;
    const Clock::duration limit = limit_for(state).limit;
    if (now - state.last_progress >= limit) trigger = std::min(trigger.value_or(limit), limit);
  }
  if (trigger) {
    std::vector<std::pair<const RankState*, Stall>> listed;
    for (const auto& [rank, state] : ranks_) {
      const Clock::duration silent = now - state.last_progress;
      if (state.exited || silent < *trigger / 2) continue;
      const SilenceLimit limit = limit_for(state);
      Stall stall;
      stall.rank = rank;
      stall.before_rendezvous = !state.rendezvous_done;
      stall.last_step = state.last_step;
      stall.began_step = state.began_step;
      stall.stage = state.stage;
      stall.silent_for = silent;
      stall.limit = limit.limit;
      stall.limit_basis = limit.basis;
      listed.emplace_back(&state, std::move(stall));
    }
    std::stable_sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) {
      return std::make_tuple(progress_of(*a.first), a.first->last_progress) <
             std::make_tuple(progress_of(*b.first), b.first->last_progress);
    });
    for (auto& [state, stall] : listed) verdict.stalls.push_back(std::move(stall));
  }
  verdict.non_finite = non_finite_;
  verdict.stop = !verdict.stalls.empty() || (non_finite_ && limits_.stop_on_non_finite);
  return verdict;
}

Clock::time_point Watchdog::next_deadline() const {
  Clock::time_point earliest = Clock::time_point::max();
  for (const auto& [rank, state] : ranks_) {
    if (!state.exited) earliest = std::min(earliest, state.last_progress + limit_for(state).limit);
  }
  return earliest;
}

std::optional<Watchdog::Quietest> Watchdog::quietest(Clock::time_point now) const {
  std::optional<Quietest> out;
  double worst = -1;
  for (const auto& [rank, state] : ranks_) {
    if (state.exited) continue;
    const Clock::duration limit = limit_for(state).limit;
    const Clock::duration silent = std::max(Clock::duration::zero(), now - state.last_progress);
    const double share = limit > Clock::duration::zero()
                             ? std::chrono::duration<double>(silent).count() /
                                   std::chrono::duration<double>(limit).count()
                             : 0;
    if (share > worst) {
      worst = share;
      out = Quietest{rank, silent, limit};
    }
  }
  return out;
}

}  // namespace bigmac::launch
