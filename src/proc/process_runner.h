#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "proc/rank_process.h"

namespace bigmac::proc {

/// Receives output as it arrives, in order per stream; bytes may split lines anywhere.
using OutputSink = std::function<void(int rank, Stream stream, std::string_view bytes)>;

/// What one poll saw: ranks that exited (their output before exit was delivered first).
struct PollResult {
  std::vector<RankExit> exited;
  bool output = false;  ///< some bytes were delivered
};

/// A passive process layer in the style of ninja's SubprocessSet: it starts ranks, reports what
/// happened when asked, and stops the whole group. It never decides anything. All ranks spawned
/// by one runner share one process group. One runner per gate attempt; not thread-safe.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;

  /// Starts a rank. The error names the rank and argv[0] (missing binary, permission).
  virtual Expected<pid_t> spawn(const RankSpec& spec) = 0;

  /// Waits up to `timeout` for output or an exit, delivers output to `sink`, reaps exits.
  /// Returns early as soon as something happened.
  virtual PollResult poll(std::chrono::milliseconds timeout, const OutputSink& sink) = 0;

  /// Ranks spawned and not yet reaped.
  virtual std::size_t running() const = 0;

  /// SIGTERM to the group, up to `grace` for the ranks to exit (output still delivered), then
  /// SIGKILL to the group; reaps every rank and any grandchild left in the group, drains and
  /// closes the output. Returns the exits it reaped. A rank stuck in uninterruptible sleep
  /// (a hung driver call) may outlast SIGKILL; after a bounded wait it is left unreported
  /// rather than hanging the orchestrator. Safe to call when nothing runs: it still
  /// removes grandchildren that outlived their rank.
  virtual std::vector<RankExit> terminate(std::chrono::milliseconds grace,
                                          const OutputSink& sink) = 0;

  /// The process group of the ranks (0 before the first spawn).
  virtual pid_t process_group() const = 0;

  /// Pids of every rank spawned so far, in spawn order.
  virtual std::vector<pid_t> pids() const = 0;
};

}  // namespace bigmac::proc
