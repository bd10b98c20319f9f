#pragma once

#include <memory>
#include <vector>

#include "proc/pipe.h"
#include "proc/process_runner.h"

namespace bigmac::proc {

/// The real ProcessRunner: fork + execve, one process group per runner, pipes read with poll()
/// and pidfds so that exits wake the loop without a SIGCHLD handler. Each stream is copied to its
/// own file while it streams, so a rank that prints 100 MB never blocks on a full pipe.
///
/// Every rank runs under a shepherd (proc/rank_shepherd.h): a forked copy of this process that
/// is the rank's parent and a child subreaper, and exits the way the rank did. The shepherd gets
/// PR_SET_PDEATHSIG, so when the orchestrator dies — SIGKILL included — it kills the rank and
/// everything the rank started (torchrun's workers, a command trainer's own children, also those
/// in another process group or session) before it exits. The pids this runner reports are the
/// shepherds'. PR_SET_PDEATHSIG fires when the *thread* that spawned a rank exits, so spawn from
/// a thread that lives as long as the run (normally the main thread).
///
/// The runner also makes the calling process a child subreaper, so a shepherd's leftovers come
/// back to it and terminate() can reap them instead of leaving zombies to an init that may not.
class PosixProcessRunner final : public ProcessRunner {
 public:
  PosixProcessRunner();
  ~PosixProcessRunner() override;
  PosixProcessRunner(const PosixProcessRunner&) = delete;
  PosixProcessRunner& operator=(const PosixProcessRunner&) = delete;

  Expected<pid_t> spawn(const RankSpec& spec) override;
  PollResult poll(std::chrono::milliseconds timeout, const OutputSink& sink) override;
  std::size_t running() const override;
  std::vector<RankExit> terminate(std::chrono::milliseconds grace, const OutputSink& sink) override;
  pid_t process_group() const override { return pgid_; }
  std::vector<pid_t> pids() const override;

 private:
  struct Child;

  bool read_stream(Child& child, Stream stream, std::size_t budget, const OutputSink& sink);
  void reap(std::vector<RankExit>& exits, const OutputSink& sink);
  void reap_group_leftovers();
  void drain_and_close(const OutputSink& sink);

  std::vector<std::unique_ptr<Child>> children_;
  pid_t pgid_ = 0;
  pid_t self_ = 0;
  bool use_pidfd_ = true;
};

}  // namespace bigmac::proc
