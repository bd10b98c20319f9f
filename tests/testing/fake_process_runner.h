#pragma once

#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "proc/process_runner.h"
#include "testing/fake_clock.h"

namespace bigmac::testing {

/// A scripted ProcessRunner for unit tests of whatever drives ranks (ninja's fake
/// CommandRunner). Tests queue output and exits; poll() delivers everything queued, in order.
/// When nothing is queued, poll() first calls `on_idle_poll` (so a test can script what happens
/// next), and if still nothing is queued it advances the FakeClock by the poll timeout — so a
/// watchdog deadline passes without any real waiting.
class FakeProcessRunner final : public proc::ProcessRunner {
 public:
  explicit FakeProcessRunner(FakeClock* clock = nullptr) : clock_(clock) {}

  // ---- scripting ----
  void emit(int rank, proc::Stream stream, std::string bytes) {
    queue_.push_back(Output{rank, stream, std::move(bytes)});
  }
  void emit_line(int rank, std::string line) { emit(rank, proc::Stream::kStdout, line + "\n"); }
  void emit_error_line(int rank, std::string line) {
    emit(rank, proc::Stream::kStderr, line + "\n");
  }
  void exit(int rank, int code) { queue_.push_back(Exit{rank, proc::ExitStatus{code, 0}}); }
  void kill_by(int rank, int signal) { queue_.push_back(Exit{rank, proc::ExitStatus{0, signal}}); }
  /// Advance the clock before the next queued event is delivered.
  void wait_seconds(double s) { queue_.push_back(Wait{launch::duration_of_seconds(s)}); }
  void fail_spawn(int rank, Error error) { spawn_failures_[rank] = std::move(error); }
  void ignore_sigterm(int rank) { ignores_term_.insert(rank); }

  std::function<void(FakeProcessRunner&)> on_idle_poll;

  // ---- inspection ----
  const std::vector<proc::RankSpec>& spawned() const { return spawned_; }
  int sigterm_sent() const { return sigterm_sent_; }
  int sigkill_sent() const { return sigkill_sent_; }
  int polls() const { return polls_; }

  // ---- ProcessRunner ----
  Expected<pid_t> spawn(const proc::RankSpec& spec) override {
    auto failure = spawn_failures_.find(spec.rank);
    if (failure != spawn_failures_.end()) return tl::unexpected(failure->second);
    spawned_.push_back(spec);
    const pid_t pid = 1000 + static_cast<pid_t>(spawned_.size());
    running_[spec.rank] = pid;
    return pid;
  }

  proc::PollResult poll(std::chrono::milliseconds timeout, const proc::OutputSink& sink) override {
    ++polls_;
    proc::PollResult result;
    if (queue_.empty() && on_idle_poll) on_idle_poll(*this);
    if (queue_.empty()) {
      if (clock_ != nullptr) clock_->advance(timeout);
      return result;
    }
    while (!queue_.empty()) {
      Event event = std::move(queue_.front());
      queue_.pop_front();
      if (auto* wait = std::get_if<Wait>(&event)) {
        if (clock_ != nullptr) clock_->advance(wait->d);
        break;  // let the caller look at the clock before the next event
      }
      if (auto* out = std::get_if<Output>(&event)) {
        if (running_.count(out->rank) != 0 && sink) sink(out->rank, out->stream, out->bytes);
        result.output = true;
      } else if (auto* ex = std::get_if<Exit>(&event)) {
        auto it = running_.find(ex->rank);
        if (it == running_.end()) continue;
        result.exited.push_back(proc::RankExit{ex->rank, it->second, ex->status});
        running_.erase(it);
      }
    }
    return result;
  }

  std::size_t running() const override { return running_.size(); }

  std::vector<proc::RankExit> terminate(std::chrono::milliseconds grace,
                                        const proc::OutputSink&) override {
    std::vector<proc::RankExit> exits;
    if (!running_.empty()) ++sigterm_sent_;
    bool killed = false;
    for (const auto& [rank, pid] : running_) {
      const bool ignores = ignores_term_.count(rank) != 0;
      killed |= ignores;
      exits.push_back(proc::RankExit{rank, pid, proc::ExitStatus{0, ignores ? SIGKILL : SIGTERM}});
    }
    if (killed) {
      ++sigkill_sent_;
      if (clock_ != nullptr) clock_->advance(grace);
    }
    running_.clear();
    queue_.clear();
    return exits;
  }

  pid_t process_group() const override { return spawned_.empty() ? 0 : 1001; }

  std::vector<pid_t> pids() const override {
    std::vector<pid_t> out;
    for (std::size_t i = 0; i < spawned_.size(); ++i) out.push_back(1001 + static_cast<pid_t>(i));
    return out;
  }

 private:
  struct Output {
    int rank;
    proc::Stream stream;
    std::string bytes;
  };
  struct Exit {
    int rank;
    proc::ExitStatus status;
  };
  struct Wait {
    launch::Clock::duration d;
  };
  using Event = std::variant<Output, Exit, Wait>;

  FakeClock* clock_;
  std::deque<Event> queue_;
  std::map<int, pid_t> running_;
  std::map<int, Error> spawn_failures_;
  std::set<int> ignores_term_;
  std::vector<proc::RankSpec> spawned_;
  int sigterm_sent_ = 0;
  int sigkill_sent_ = 0;
  int polls_ = 0;
};

}  // namespace bigmac::testing
