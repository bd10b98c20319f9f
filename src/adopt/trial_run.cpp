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
  FollowedFile(std::filesystem::path path, bool from_probe)
      : tail(std::move(path)), probe(from_probe) {}
  launch::LogFileTail tail;
  StepCounter counter;
  bool probe = false;  ///< the probe's events: one `step` per optimizer step
  bool read() {
    std::string bytes;
    if (tail.read(bytes) == 0) return false;
    counter.feed(bytes);
    seen = true;
    return true;
  }
  bool seen = false;  ///< anything was written to it
};

/// The trial's outputs and what they showed so far.
class TrialWatch {
 public:
  TrialWatch(const TrialSpec& spec, const launch::Clock& clock)
      : clock_(clock),
        started_(clock.now()),
        last_output_(started_),
        out_(spec.nproc),
        err_(spec.nproc) {
    for (int r = 0; r < spec.nproc; ++r) {
      if (!spec.log_file.empty())
        files_.push_back(std::make_unique<FollowedFile>(for_rank(spec.log_file, r), false));
      if (!spec.probe_log.empty())
        files_.push_back(std::make_unique<FollowedFile>(for_rank(spec.probe_log, r), true));
    }
  }

  proc::OutputSink sink() {
    return [this](int rank, proc::Stream stream, std::string_view bytes) {
      const std::size_t r =
          static_cast<std::size_t>(std::clamp(rank, 0, static_cast<int>(out_.size()) - 1));
      (stream == proc::Stream::kStdout ? out_[r] : err_[r]).feed(bytes);
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
    for (StepCounter& c : out_) c.finish();
    for (StepCounter& c : err_) c.finish();
    for (auto& f : files_) f->counter.finish();
    run.seconds = launch::seconds_of(clock_.now() - started_);
    if (first_step_) note_silence(clock_.now());
    run.longest_silence_s = longest_silence_s_;
    run.steps_seen = steps();
    run.first_step_s = first_step_ ? launch::seconds_of(*first_step_ - started_) : -1;
  }

  // Optimizer steps: the probe's count once it writes (a trainer may print a loss line per
  // closure call or per micro-batch: LBFGS prints 20 before its first step ends), else the
  // most any output logged. Under the probe the trainer's lines count a quarter, for an
  // optimizer the probe cannot see.
  std::int64_t steps() const {
    std::int64_t probe = 0;
    bool probe_seen = false;
    for (const auto& f : files_) {
      if (!f->probe) continue;
      probe = std::max(probe, f->counter.steps());
      probe_seen = probe_seen || f->seen;
    }
    if (probe > 0) return probe;
    std::int64_t most = 0;
    for (const StepCounter& c : out_) most = std::max(most, c.steps());
    for (const StepCounter& c : err_) most = std::max(most, c.steps());
    for (const auto& f : files_) most = std::max(most, f->counter.steps());
    return probe_seen ? most / 4 : most;
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
  std::vector<StepCounter> out_, err_;  // by rank
  std::vector<std::unique_ptr<FollowedFile>> files_;
};

}  // namespace

std::filesystem::path for_rank(const std::filesystem::path& pattern, int rank) {
  std::string text = pattern.string();
  for (std::size_t at = text.find("{rank}"); at != std::string::npos; at = text.find("{rank}")) {
    text.replace(at, 6, std::to_string(rank));
  }
  return text;
}

Expected<TrialRun> run_trial(const TrialSpec& spec, proc::ProcessRunner& runner,
                             const launch::Clock& clock) {
  TrialRun run;
  TrialWatch watch(spec, clock);
  const proc::OutputSink sink = watch.sink();
  for (int r = 0; r < spec.nproc; ++r) {
    TrialRank& rank = run.ranks.emplace_back();
    rank.rank = r;
    const std::string prefix = spec.nproc == 1 ? "" : "rank" + std::to_string(r) + ".";
    rank.stdout_path = spec.work_dir / (prefix + "stdout.log");
    rank.stderr_path = spec.work_dir / (prefix + "stderr.log");
    if (!spec.log_file.empty()) rank.log_file = for_rank(spec.log_file, r);
    if (!spec.probe_log.empty()) rank.probe_log = for_rank(spec.probe_log, r);
    proc::RankSpec process;
    process.rank = r;
    for (const std::string& word : spec.argv) process.argv.push_back(for_rank(word, r).string());
    process.env = spec.env;
    // As torchrun starts a worker: every process knows its place.
    process.env["RANK"] = std::to_string(r);
    process.env["LOCAL_RANK"] = std::to_string(r);
    process.env["WORLD_SIZE"] = std::to_string(spec.nproc);
    process.env["LOCAL_WORLD_SIZE"] = std::to_string(spec.nproc);
    process.stdout_path = rank.stdout_path;
    process.stderr_path = rank.stderr_path;
    if (auto started = runner.spawn(process); !started) {
      runner.terminate(kStopGrace, sink);
      return tl::unexpected(started.error());
    }
  }
  run.stdout_path = run.ranks.front().stdout_path;
  run.stderr_path = run.ranks.front().stderr_path;
  int ended = 0;
  bool failed = false;
  while (runner.running() > 0) {
    for (const proc::RankExit& e : runner.poll(kPollInterval, sink).exited) {
      if (e.rank < 0 || e.rank >= spec.nproc) continue;
      TrialRank& rank = run.ranks[static_cast<std::size_t>(e.rank)];
      rank.exit = e.status;
      rank.exited = true;
      ++ended;
      failed = failed || !e.status.success();
    }
    watch.read_files();
    if (ended == spec.nproc) break;
    // One process that failed leaves the others waiting for it in a collective.
    if (failed) break;
    if (spec.stop_after_steps > 0 && watch.steps() >= spec.stop_after_steps) {
      run.stopped = true;
    } else if (watch.elapsed_s() * 1000 >= static_cast<double>(spec.timeout.count())) {
      run.timed_out = true;
    }
    if (run.stopped || run.timed_out) break;
  }
  // Also when they exited: their own children (a DataLoader's workers) go with the group. At
  // the time limit a program that ignores SIGTERM gets no longer than the limit again.
  const std::chrono::milliseconds grace =
      run.timed_out ? std::min(kStopGrace, std::max(spec.timeout, std::chrono::milliseconds(1000)))
                    : kStopGrace;
  for (const proc::RankExit& e : runner.terminate(grace, sink)) {
    if (e.rank < 0 || e.rank >= spec.nproc) continue;
    TrialRank& rank = run.ranks[static_cast<std::size_t>(e.rank)];
    if (!rank.exited) rank.exit = e.status;
  }
  run.exited = ended == spec.nproc;
  run.exit = run.ranks.front().exit;
  for (const TrialRank& r : run.ranks) {
    if (r.exited && !r.exit.success()) {
      run.exit = r.exit;
      break;
    }
  }
  watch.finish(run);
  return run;
}

}  // namespace bigmac::adopt
