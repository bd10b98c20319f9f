#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/clock.h"

namespace bigmac::launch {

/// What a rank showed: any line of output, or a typed log event that means more.
enum class ProgressKind {
  kOutput,     ///< any other line
  kPgReady,    ///< the process group formed
  kStep,       ///< a step record: the rank finished global_step
  kHeartbeat,  ///< finished global_step, or began it (`began`)
  kLayout,     ///< the rank's pipeline stage
  kPause,      ///< `eval` start or `ckpt`: work between steps that may be long
  kPauseEnd,   ///< `eval` end
  kDone,       ///< `done`: the rank finished training and is ending (may be quiet a while)
};

/// One piece of evidence that a rank is alive, as the log parser saw it.
struct ProgressEvent {
  int rank = 0;
  /// When the rank logged it (the line's own `t`, placed on the watchdog's clock by LineClock),
  /// else when it was read.
  Clock::time_point time;
  /// The line's own wall time `t` (seconds; 0: none). Steps are timed from these when both ends
  /// have one: `time` is placed by the least delay seen so far, which shrinks as lines arrive,
  /// so two lines read in different polls may be placed closer together than they were logged.
  double wall = 0;
  ProgressKind kind = ProgressKind::kOutput;
  std::optional<std::int64_t> global_step;  ///< kStep, kHeartbeat, kPause
  std::optional<double> loss;               ///< kStep
  std::optional<double> step_ms;            ///< kStep: the trainer's own measure of the step
  std::optional<int> stage;                 ///< kLayout
  bool began = false;                       ///< kHeartbeat: the rank began global_step
};

/// How long a rank may be silent (launch.init_timeout_s, stall_timeout_s, stall_min_s,
/// stall_factor), as durations.
struct WatchdogLimits {
  Clock::duration init_timeout = std::chrono::seconds(60);   ///< silence allowed before pg_ready
  Clock::duration stall_timeout = std::chrono::seconds(60);  ///< the most allowed after it
  bool stop_on_non_finite = true;  ///< false: record a non-finite loss but let the gate run on
  Clock::duration stall_min = std::chrono::seconds(5);  ///< the adaptive limit's floor
  double stall_factor = 10;  ///< adaptive limit = factor × median step time; 0: never adaptive
  int timed_steps = 2;       ///< steps a rank must have timed before its limit adapts
};

/// A rank's limit at one instant and where it came from.
struct SilenceLimit {
  Clock::duration limit{};
  /// "init_timeout_s, before the process group formed", "max(stall_min_s 5 s, 10 × median
  /// step 0.112 s)", ...
  std::string basis;
};

/// A rank that was silent past its limit: who, where, and for how long.
struct Stall {
  int rank = 0;
  bool before_rendezvous = true;           ///< no pg_ready, step or heartbeat seen yet
  std::optional<std::int64_t> last_step;   ///< the last step it finished
  std::optional<std::int64_t> began_step;  ///< a step it began and did not finish
  std::optional<int> stage;
  Clock::duration silent_for{};
  Clock::duration limit{};
  std::string limit_basis;
  /// Where its main thread was when the run stopped (the probe's stacks, rank_stacks.h), e.g.
  /// "in all_reduce, called at train.py:61 in main"; empty when not asked.
  std::string stack;
  /// Its stack shows it outside any torch.distributed call and backward while others wait.
  bool elsewhere = false;
  /// Its place in the collective ledger against the others' (the probe's `coll` events), e.g.
  /// "never reached all_reduce #6 of world (float32[1,4], train.py:40), which rank 0 waits in;
  /// its last: all_reduce #5"; empty when no rank logged a collective.
  std::string collective;
  bool behind = false;  ///< the ledger shows it never reached the collective others are in
  bool desync = false;  ///< at the same index it called another collective than the others

  /// "rank 1 stalled after step 3 (stage 1): no progress for 5.2 s (limit 5.0 s: max(stall_min_s
  /// 5 s, 10 × median step 0.112 s))".
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
  /// Once a rank is past its limit: every running rank silent for at least half that limit, the
  /// rank that stopped first first: least progress (before rendezvous, then the lowest step
  /// begun or finished), then the earliest last line.
  std::vector<Stall> stalls;
  std::optional<NonFiniteLoss> non_finite;
  bool stop = false;  ///< the gate should be stopped now
};

/// Per-rank liveness (torch.distributed.elastic's monitor step, without the processes): fed with
/// observations and exits, asked for a verdict at a time. Pure: no clock, no I/O.
///
/// A rank is stalled when silent past its limit: init_timeout before the process group forms;
/// after it, once the rank has timed `timed_steps` steps, max(stall_min, stall_factor × its
/// median step time) but never more than stall_timeout; stall_timeout until then and while it
/// pauses for an evaluation or a checkpoint (until its next step), and after its `done` line
/// (writing a last checkpoint, tearing down a process group). Any line is progress.
class Watchdog {
 public:
  struct RankState {
    Clock::time_point last_progress;
    bool rendezvous_done = false;
    bool exited = false;
    std::optional<std::int64_t> last_step;   ///< finished
    std::optional<std::int64_t> began_step;  ///< begun, not finished
    std::optional<int> stage;
    std::vector<Clock::duration> step_times;  ///< of finished steps, in order
    bool timed_by_trainer = false;            ///< step_times are the trainer's step_ms
    std::optional<std::int64_t> last_timed_step;
    std::optional<Clock::time_point> last_finish;
    std::optional<Clock::time_point> rendezvous_at;
    double last_finish_wall = 0;  ///< the line's own t of last_finish / rendezvous_at (0: none)
    double rendezvous_wall = 0;
    std::optional<std::int64_t> paused_at;  ///< global step of a pending eval/ckpt pause
    bool done = false;                      ///< logged `done`: only its exit is awaited
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
  /// The running rank nearest its limit (the largest silence / limit): what a status line shows
  /// while nothing arrives. nullopt when nothing runs.
  struct Quietest {
    int rank = 0;
    Clock::duration silent{};
    Clock::duration limit{};
  };
  std::optional<Quietest> quietest(Clock::time_point now) const;
  /// The limit that applies to `state` now, with its derivation.
  SilenceLimit limit_for(const RankState& state) const;

  const std::map<int, RankState>& ranks() const { return ranks_; }

 private:
  void finished_step(RankState& state, const ProgressEvent& o);

  WatchdogLimits limits_;
  std::map<int, RankState> ranks_;
  std::optional<NonFiniteLoss> non_finite_;
};

}  // namespace bigmac::launch
