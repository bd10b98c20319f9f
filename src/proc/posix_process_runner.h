#pragma once

#include <memory>
#include <vector>

#include "proc/fd.h"
#include "proc/process_runner.h"

namespace bigmac::proc {

/// The real ProcessRunner: fork + execve, one process group per runner, PR_SET_PDEATHSIG so a
/// rank dies with the orchestrator, pipes read with poll() and pidfds so that exits wake the loop
/// without a SIGCHLD handler. Each stream is copied to its own file while it streams, so a rank
/// that prints 100 MB never blocks on a full pipe.
///
/// The runner makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): a grandchild
/// orphaned by its rank is re-parented to us, so terminate() can reap it instead of leaving a
/// zombie to an init that may not reap. PR_SET_PDEATHSIG fires when the *thread* that spawned a
/// rank exits, so spawn from a thread that lives as long as the run (normally the main thread).
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
