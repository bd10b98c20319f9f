#include "launch/plan_execution.h"

#include <algorithm>
#include <map>
#include <optional>

#include "launch/error_line.h"
#include "launch/line_clock.h"
#include "launch/log_file_tail.h"
#include "launch/process_record.h"
#include "launch/torchrun_failure.h"
#include "logs/log_stream.h"

namespace bigmac::launch {
namespace {

using std::chrono::milliseconds;

/// The live state of one planned process (elastic's WorkerGroup, minus the decisions).
struct LiveProcess {
  const PlannedProcess* planned = nullptr;
  pid_t pid = 0;
  Clock::time_point started;
  std::optional<Clock::time_point> first_output;
  std::optional<Clock::time_point> ended;
  std::optional<proc::ExitStatus> exit;
  bool stopped_by_us = false;
  logs::LogStream out;
  logs::LogStream err;
  ErrorLine process_error;  // stderr lines that name no rank
  std::string stderr_tail;  // the last bytes of stderr, for launcher summaries (torchrun)
};

/// A rank's own log file, followed while it runs.
struct RankLogFile {
  int rank = 0;
  LogFileTail tail;
  logs::LogStream stream;
};

class Execution {
 public:
  Execution(const LaunchPlan& plan, proc::ProcessRunner& runner, const Clock& clock,
            const RunOptions& options, const RecordSink& on_record)
      : plan_(plan),
        runner_(runner),
        clock_(clock),
        options_(options),
        on_record_(on_record),
        start_(clock.now()),
        watchdog_(all_ranks(plan), options.limits, start_) {}

  RunResult run();

 private:
  static std::vector<int> all_ranks(const LaunchPlan& plan) {
    std::vector<int> ranks;
    for (const RankAssignment& r : plan.ranks) ranks.push_back(r.rank);
    return ranks;
  }

  void on_output(int spec_rank, proc::Stream stream, std::string_view bytes);
  void handle(LiveProcess& live, proc::Stream stream, const std::vector<logs::Record>& records);
  void on_exit(const proc::RankExit& exit, bool during_teardown);
  void follow_log_files(bool at_end);
  void observe(const logs::Record& record, int rank, Clock::time_point now, double now_wall);
  std::optional<std::string> ask_stop_request();
  void attribute_torchrun_failure(const LiveProcess& live, ProcessFailure& failure);
  std::optional<RunStatus> verdict_now();
  RunResult finish(RunStatus status);

  const LaunchPlan& plan_;
  proc::ProcessRunner& runner_;
  const Clock& clock_;
  const RunOptions& options_;
  const RecordSink& on_record_;
  const Clock::time_point start_;
  Watchdog watchdog_;
  LineClock line_clock_;
  bool decisive_records_ = false;  // step/batch records since stop_request was last asked
  std::optional<Clock::time_point> next_stop_request_;
  std::vector<LiveProcess> live_;
  std::map<int, std::size_t> by_spec_rank_;
  std::map<int, ErrorLine> rank_errors_;
  std::vector<ProcessFailure> failures_;
  WatchdogVerdict last_verdict_;
  std::string stop_reason_;
  std::map<int, Watchdog::RankState> at_stop_;
  Clock::time_point stop_time_;
  std::vector<logs::Record> scratch_;
  std::vector<RankLogFile> log_files_;
  std::string file_bytes_;
};

void Execution::observe(const logs::Record& record, int rank, Clock::time_point now,
                        double now_wall) {
  if (std::holds_alternative<logs::StepRecord>(record) ||
      std::holds_alternative<logs::BatchRecord>(record)) {
    decisive_records_ = true;
  }
  const Clock::time_point logged =
      line_clock_.place(rank, logs::origin_of(record).t, now, now_wall);
  watchdog_.observe(observation_of(record, rank, logged));
}

void Execution::follow_log_files(bool at_end) {
  const Clock::time_point now = clock_.now();
  const double now_wall = clock_.wall_seconds();
  for (RankLogFile& file : log_files_) {
    file_bytes_.clear();
    scratch_.clear();
    if (file.tail.read(file_bytes_) > 0) file.stream.feed(file_bytes_, scratch_);
    if (at_end) file.stream.finish(scratch_);
    for (const logs::Record& record : scratch_) {
      const int rank = logs::origin_of(record).rank;
      observe(record, rank < 0 ? file.rank : rank, now, now_wall);
      if (on_record_) on_record_(record, RecordSource::kLogFile);
    }
  }
}

void Execution::on_output(int spec_rank, proc::Stream stream, std::string_view bytes) {
  auto it = by_spec_rank_.find(spec_rank);
  if (it == by_spec_rank_.end()) return;
  LiveProcess& live = live_[it->second];
  if (!live.first_output) live.first_output = clock_.now();
  if (stream == proc::Stream::kStderr && plan_.launcher == LauncherKind::kTorchrun) {
    constexpr std::size_t kTail = 64 * 1024;
    live.stderr_tail.append(bytes);
    if (live.stderr_tail.size() > 2 * kTail)
      live.stderr_tail.erase(0, live.stderr_tail.size() - kTail);
  }
  scratch_.clear();
  (stream == proc::Stream::kStdout ? live.out : live.err).feed(bytes, scratch_);
  handle(live, stream, scratch_);
}

void Execution::handle(LiveProcess& live, proc::Stream stream,
                       const std::vector<logs::Record>& records) {
  const Clock::time_point now = clock_.now();
  const double now_wall = clock_.wall_seconds();
  const std::vector<int>& ranks = live.planned->ranks;
  for (const logs::Record& record : records) {
    int rank = logs::origin_of(record).rank;
    // A line that names no rank belongs to the process's only rank; with several ranks behind
    // one process (torchrun's own messages) it is nobody's progress.
    if (rank < 0 && ranks.size() == 1) rank = ranks.front();
    const bool known = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
    if (known) observe(record, rank, now, now_wall);
    if (stream == proc::Stream::kStderr) {
      if (const auto* text = std::get_if<logs::TextLine>(&record)) {
        (known ? rank_errors_[rank] : live.process_error).add(text->text);
      }
    }
    if (on_record_) {
      on_record_(record,
                 stream == proc::Stream::kStdout ? RecordSource::kStdout : RecordSource::kStderr);
    }
  }
}

void Execution::on_exit(const proc::RankExit& exit, bool during_teardown) {
  auto it = by_spec_rank_.find(exit.rank);
  if (it == by_spec_rank_.end()) return;
  LiveProcess& live = live_[it->second];
  live.exit = exit.status;
  live.ended = clock_.now();
  live.stopped_by_us = during_teardown;
  for (int rank : live.planned->ranks) watchdog_.rank_exited(rank);
  if (exit.status.success() || during_teardown) return;
  ProcessFailure failure;
  failure.rank = exit.rank;
  failure.pid = exit.pid;
  failure.status = exit.status;
  failure.at = *live.ended - start_;
  // Output that arrived before the exit is parsed; a last line without newline is flushed here.
  scratch_.clear();
  live.err.finish(scratch_);
  handle(live, proc::Stream::kStderr, scratch_);
  auto own = rank_errors_.find(exit.rank);
  failure.first_error_line = own != rank_errors_.end() && !own->second.best().empty()
                                 ? own->second.best()
                                 : live.process_error.best();
  if (plan_.launcher == LauncherKind::kTorchrun) attribute_torchrun_failure(live, failure);
  failures_.push_back(std::move(failure));
}

void Execution::attribute_torchrun_failure(const LiveProcess& live, ProcessFailure& failure) {
  // torchrun exits 1 whatever happened to its workers; its summary names the worker that
  // failed first, and its per-rank stderr.log holds that worker's own error text.
  auto cause = parse_torchrun_root_cause(live.stderr_tail);
  if (!cause) return;
  failure.rank = cause->rank;
  failure.pid = cause->pid;
  failure.status = cause->status;
  std::string line = torchrun_rank_error_line(plan_.log_dir / "torchrun", cause->local_rank);
  if (!line.empty()) failure.first_error_line = std::move(line);
}

std::optional<RunStatus> Execution::verdict_now() {
  // Files are read before judging, so progress written there just now is never missed.
  follow_log_files(false);
  if (options_.cancel != nullptr && options_.cancel->load()) return RunStatus::kInterrupted;
  if (!failures_.empty()) return RunStatus::kFailed;
  last_verdict_ = watchdog_.check(clock_.now());
  if (last_verdict_.stop) {
    return last_verdict_.stalls.empty() ? RunStatus::kNonFinite : RunStatus::kStalled;
  }
  if (runner_.running() == 0) return RunStatus::kSucceeded;
  if (auto reason = ask_stop_request()) {
    stop_reason_ = std::move(*reason);
    return RunStatus::kStoppedEarly;
  }
  return std::nullopt;
}

std::optional<std::string> Execution::ask_stop_request() {
  if (!options_.stop_request || !decisive_records_) return std::nullopt;
  const Clock::time_point asked = clock_.now();
  if (next_stop_request_ && asked < *next_stop_request_) return std::nullopt;
  decisive_records_ = false;
  std::optional<std::string> reason = options_.stop_request();
  // Its cost grows with the records; asking again only after ten times that long keeps it
  // under a tenth of the run while a step is still seen at once when steps are slower.
  next_stop_request_ = clock_.now() + 9 * (clock_.now() - asked);
  return reason;
}

RunResult Execution::run() {
  live_.reserve(plan_.processes.size());
  if (options_.follow_log_files) {
    for (const RankAssignment& r : plan_.ranks) {
      if (r.log_path.empty()) continue;
      log_files_.push_back(RankLogFile{r.rank, LogFileTail(r.log_path),
                                       logs::LogStream(options_.format, r.rank, options_.fields)});
    }
  }
  const proc::OutputSink sink = [this](int r, proc::Stream s, std::string_view b) {
    on_output(r, s, b);
  };
  std::optional<Error> launch_error;
  for (const PlannedProcess& planned : plan_.processes) {
    LiveProcess& live = live_.emplace_back();
    live.planned = &planned;
    const int default_rank = planned.ranks.size() == 1 ? planned.ranks.front() : -1;
    live.out = logs::LogStream(options_.format, default_rank, options_.fields);
    live.err = logs::LogStream(options_.format, default_rank, options_.fields);
    by_spec_rank_[planned.spec.rank] = live_.size() - 1;
    live.started = clock_.now();
    auto pid = runner_.spawn(planned.spec);
    if (!pid) {
      launch_error = pid.error();
      break;
    }
    live.pid = *pid;
  }
  if (!launch_error && !options_.process_record.empty() && runner_.process_group() != 0) {
    // Without the record a killed run's leftovers cannot be found by the next preflight, so
    // a record that cannot be written stops the launch (infrastructure) before it runs on.
    if (auto w = write_process_record(options_.process_record,
                                      ProcessRecord{runner_.process_group(), runner_.pids()});
        !w) {
      launch_error = w.error();
      launch_error->kind = ErrorKind::kInfrastructure;
    }
  }
  if (launch_error) {
    for (const proc::RankExit& e : runner_.terminate(options_.term_grace, sink)) on_exit(e, true);
    RunResult result = finish(RunStatus::kLaunchFailed);
    result.launch_error = launch_error;
    return result;
  }

  std::optional<RunStatus> status;
  while (!(status = verdict_now())) {
    const Clock::time_point now = clock_.now();
    Clock::duration wait = options_.poll_interval;
    const Clock::time_point deadline = watchdog_.next_deadline();
    if (deadline != Clock::time_point::max()) wait = std::min(wait, deadline - now);
    // Round up so that the wake-up lands at or just past the deadline, never just before it.
    auto wait_ms = std::chrono::ceil<milliseconds>(std::max(wait, Clock::duration::zero()));
    for (const proc::RankExit& e : runner_.poll(wait_ms, sink).exited) on_exit(e, false);
  }
  // What every rank looked like when the run was stopped, before teardown output arrives.
  at_stop_ = watchdog_.ranks();
  stop_time_ = clock_.now();
  for (const proc::RankExit& e : runner_.terminate(options_.term_grace, sink)) on_exit(e, true);
  return finish(*status);
}

RunResult Execution::finish(RunStatus status) {
  follow_log_files(true);
  for (LiveProcess& live : live_) {
    scratch_.clear();
    live.out.finish(scratch_);
    handle(live, proc::Stream::kStdout, scratch_);
    scratch_.clear();
    live.err.finish(scratch_);
    handle(live, proc::Stream::kStderr, scratch_);
  }
  RunResult result;
  result.status = status;
  result.process_group = runner_.process_group();
  result.duration = clock_.now() - start_;
  result.failures = failures_;
  std::stable_sort(result.failures.begin(), result.failures.end(),
                   [](const ProcessFailure& a, const ProcessFailure& b) { return a.at < b.at; });
  if (!result.failures.empty()) result.root_cause = result.failures.front();
  if (status == RunStatus::kStalled) result.stalls = last_verdict_.stalls;
  result.non_finite = last_verdict_.non_finite;
  result.stop_reason = stop_reason_;
  for (const LiveProcess& live : live_) {
    for (int rank : live.planned->ranks) {
      RankOutcome o;
      o.rank = rank;
      o.pid = live.pid;
      o.exit = live.exit;
      o.stopped_by_us = live.stopped_by_us;
      auto own = rank_errors_.find(rank);
      o.first_error_line = own != rank_errors_.end() ? own->second.best() : std::string();
      if (o.first_error_line.empty() && plan_.launcher == LauncherKind::kTorchrun) {
        o.first_error_line = torchrun_rank_error_line(plan_.log_dir / "torchrun", rank);
      }
      if (o.first_error_line.empty()) o.first_error_line = live.process_error.best();
      auto state = watchdog_.ranks().find(rank);
      if (state != watchdog_.ranks().end()) {
        o.rendezvous_done = state->second.rendezvous_done;
        o.last_step = state->second.last_step;
      }
      auto stopped = at_stop_.find(rank);
      if (stopped != at_stop_.end() && !stopped->second.exited) {
        o.silent_at_stop = stop_time_ - stopped->second.last_progress;
      }
      if (live.first_output) o.first_output = *live.first_output - live.started;
      if (live.ended) o.duration = *live.ended - live.started;
      result.ranks.push_back(std::move(o));
    }
  }
  std::sort(result.ranks.begin(), result.ranks.end(),
            [](const RankOutcome& a, const RankOutcome& b) { return a.rank < b.rank; });
  return result;
}

}  // namespace

ProgressEvent observation_of(const logs::Record& record, int rank, Clock::time_point time) {
  ProgressEvent o;
  o.rank = rank;
  o.time = time;
  if (std::holds_alternative<logs::PgReadyRecord>(record)) {
    o.kind = ProgressKind::kPgReady;
  } else if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
    o.kind = ProgressKind::kStep;
    o.global_step = step->global_step;
    o.loss = step->loss;
    o.step_ms = step->step_ms;
  } else if (const auto* beat = std::get_if<logs::HeartbeatRecord>(&record)) {
    o.kind = ProgressKind::kHeartbeat;
    o.global_step = beat->global_step;
    o.began = beat->phase == "start";
  } else if (const auto* layout = std::get_if<logs::LayoutRecord>(&record)) {
    o.kind = ProgressKind::kLayout;
    o.stage = layout->stage;
  } else if (const auto* eval = std::get_if<logs::EvalRecord>(&record)) {
    o.kind = eval->phase == "end" ? ProgressKind::kPauseEnd : ProgressKind::kPause;
    o.global_step = eval->global_step;
  } else if (const auto* ckpt = std::get_if<logs::CheckpointRecord>(&record)) {
    // Writing or uploading a checkpoint may go on after the event; the next step ends it.
    o.kind = ProgressKind::kPause;
    o.global_step = ckpt->step;
  }
  return o;
}

RunOptions run_options_for(const config::LaunchConfig& launch) {
  RunOptions options;
  options.limits.init_timeout = duration_of_seconds(launch.init_timeout_s);
  options.limits.stall_timeout = duration_of_seconds(launch.stall_timeout_s);
  options.limits.stall_min = duration_of_seconds(launch.stall_min_s);
  options.limits.stall_factor = launch.stall_factor;
  return options;
}

RunResult execute_plan(const LaunchPlan& plan, proc::ProcessRunner& runner, const Clock& clock,
                       const RunOptions& options, const RecordSink& on_record) {
  Execution execution(plan, runner, clock, options, on_record);
  return execution.run();
}

}  // namespace bigmac::launch
