#include "adopt/trial_run.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "adopt/field_proposal.h"
#include "launch/log_file_tail.h"
#include "logs/log_stream.h"

namespace bigmac::adopt {
namespace {

constexpr std::chrono::milliseconds kPollInterval{200};
constexpr std::chrono::milliseconds kStopGrace{10000};

/// One output of the trial read as it grows: steps in any format `auto` reads, and lines that
/// carry a loss in a format it does not (a `[logs.fields]` map will read those).
class StepCounter {
 public:
  void feed(std::string_view bytes) {
    std::vector<logs::Record> records;
    stream_.feed(bytes, records);
    count(records);
  }
  void finish() {
    std::vector<logs::Record> records;
    stream_.finish(records);
    count(records);
  }
  std::int64_t steps() const { return std::max(steps_, loss_lines_); }

 private:
  void count(const std::vector<logs::Record>& records) {
    for (const logs::Record& r : records) {
      if (std::holds_alternative<logs::StepRecord>(r)) ++steps_;
      if (const auto* text = std::get_if<logs::TextLine>(&r); text && carries_loss(text->text))
        ++loss_lines_;
    }
  }
  logs::LogStream stream_{logs::LogFormat::kAuto, 0};
  std::int64_t steps_ = 0;
  std::int64_t loss_lines_ = 0;
};

/// A file the trainer (or the probe) appends to, followed with a counter.
struct FollowedFile {
  explicit FollowedFile(std::filesystem::path path) : tail(std::move(path)) {}
  launch::LogFileTail tail;
  StepCounter counter;
  bool read() {
    std::string bytes;
    if (tail.read(bytes) == 0) return false;
    counter.feed(bytes);
    return true;
  }
};

/// The trial's outputs and what they showed so far.
class TrialWatch {
 public:
  TrialWatch(const TrialSpec& spec, const launch::Clock& clock)
      : clock_(clock), started_(clock.now()), last_output_(started_) {
    for (const auto& path : {spec.log_file, spec.probe_log}) {
      if (!path.empty()) files_.push_back(std::make_unique<FollowedFile>(path));
    }
  }

  proc::OutputSink sink() {
    return [this](int, proc::Stream stream, std::string_view bytes) {
      (stream == proc::Stream::kStdout ? out_ : err_).feed(bytes);
      output_seen();
    };
  }

  void read_files() {
    for (auto& f : files_) {
      if (f->read()) output_seen();
    }
  }

  void finish(TrialRun& run) {
    read_files();
    out_.finish();
    err_.finish();
    for (auto& f : files_) f->counter.finish();
    run.seconds = launch::seconds_of(clock_.now() - started_);
    if (first_step_) note_silence(clock_.now());
    run.longest_silence_s = longest_silence_s_;
    run.steps_seen = steps();
    run.first_step_s = first_step_ ? launch::seconds_of(*first_step_ - started_) : -1;
  }

  std::int64_t steps() const {
    std::int64_t most = std::max(out_.steps(), err_.steps());
    for (const auto& f : files_) most = std::max(most, f->counter.steps());
    return most;
  }

  double elapsed_s() const { return launch::seconds_of(clock_.now() - started_); }

 private:
  void output_seen() {
    const auto now = clock_.now();
    if (first_step_) note_silence(now);
    if (!first_step_ && steps() > 0) first_step_ = now;
    last_output_ = now;
  }
  void note_silence(launch::Clock::time_point now) {
    longest_silence_s_ = std::max(longest_silence_s_, launch::seconds_of(now - last_output_));
  }

  const launch::Clock& clock_;
  launch::Clock::time_point started_;
  launch::Clock::time_point last_output_;
  std::optional<launch::Clock::time_point> first_step_;
  double longest_silence_s_ = 0;
  StepCounter out_, err_;
  std::vector<std::unique_ptr<FollowedFile>> files_;
};

}  // namespace

Expected<TrialRun> run_trial(const TrialSpec& spec, proc::ProcessRunner& runner,
                             const launch::Clock& clock) {
  TrialRun run;
  run.stdout_path = spec.work_dir / "stdout.log";
  run.stderr_path = spec.work_dir / "stderr.log";
  proc::RankSpec rank;
  rank.argv = spec.argv;
  rank.env = spec.env;
  rank.stdout_path = run.stdout_path;
  rank.stderr_path = run.stderr_path;
  TrialWatch watch(spec, clock);
  const proc::OutputSink sink = watch.sink();
  if (auto started = runner.spawn(rank); !started) return tl::unexpected(started.error());
  while (runner.running() > 0) {
    for (const proc::RankExit& e : runner.poll(kPollInterval, sink).exited) {
      run.exit = e.status;
      run.exited = true;
    }
    watch.read_files();
    if (run.exited) break;
    if (spec.stop_after_steps > 0 && watch.steps() >= spec.stop_after_steps) {
      run.stopped = true;
    } else if (watch.elapsed_s() * 1000 >= static_cast<double>(spec.timeout.count())) {
      run.timed_out = true;
    }
    if (run.stopped || run.timed_out) break;
  }
  // Also when it exited: its own children (a DataLoader's workers) go with the group.
  for (const proc::RankExit& e : runner.terminate(kStopGrace, sink)) {
    if (!run.exited) run.exit = e.status;
  }
  watch.finish(run);
  return run;
}

}  // namespace bigmac::adopt
