#include "launch/plan_execution.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "launch/error_line.h"
#include "launch/line_clock.h"
#include "launch/log_file_tail.h"
#include "launch/process_record.h"
#include "launch/rank_placement.h"
#include "launch/rank_stacks.h"
#include "launch/slurm_step.h"
#include "launch/srun_report.h"
#include "launch/torchrun_failure.h"
#include "launch/torchrun_worker_files.h"
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
  SrunReport srun;          // srun's and slurmstepd's own lines (slurm launchers)
};

/// A file a rank writes itself (its log, or its stdout/stderr under several torchrun agents),
/// followed while it runs.
struct RankLogFile {
  int rank = 0;
  LogFileTail tail;
  logs::LogStream stream;
  RecordSource source = RecordSource::kLogFile;
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
  /// A text line of `rank` (-1: none) from a stderr: a placement line, one of srun's own
  /// lines, or the rank's error text. True for a placement line: the launcher's bookkeeping,
  /// which goes no further.
  bool note_stderr_line(LiveProcess* live, int rank, bool known, const std::string& text);
  std::vector<int> ranks_of(const LiveProcess& live) const;
  void follow_log_files(bool at_end);
  void observe(const logs::Record& record, int rank, Clock::time_point now, double now_wall,
               RecordSource source);
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
  bool decisive_records_ = false;           // step/batch records since stop_request was last asked
  std::optional<std::int64_t> past_bound_;  // the first step at or past stop_at_step seen
  std::optional<Clock::time_point> next_stop_request_;
  std::vector<LiveProcess> live_;
  std::map<int, std::size_t> by_spec_rank_;
  std::map<int, ErrorLine> rank_errors_;
  std::map<int, RankPlacement> placements_;
  std::map<int, StackTarget> stack_targets_;  // from each rank's probe `run` line
  std::vector<RankStack> stacks_;             // asked for at a stall
  std::map<int, logs::RankLedger> ledgers_;   // each rank's ledger, as far as it got
  std::vector<ProcessFailure> failures_;
  std::vector<std::string> cleanup_problems_;
  void note_cleanup(std::string problem) {
    if (!problem.empty()) cleanup_problems_.push_back(std::move(problem));
  }
  WatchdogVerdict last_verdict_;
  std::string stop_reason_;
  std::map<int, Watchdog::RankState> at_stop_;
  Clock::time_point stop_time_;
  std::vector<logs::Record> scratch_;
  std::vector<RankLogFile> log_files_;
  std::string file_bytes_;
};

void Execution::observe(const logs::Record& record, int rank, Clock::time_point now,
                        double now_wall, RecordSource source) {
  if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
    decisive_records_ = true;
    const bool counted = !options_.bound_by_probe || source == RecordSource::kProbe;
    if (options_.stop_at_step && counted && step->global_step >= *options_.stop_at_step &&
        !past_bound_) {
      past_bound_ = step->global_step;
    }
  } else if (std::holds_alternative<logs::BatchRecord>(record)) {
    decisive_records_ = true;
  } else if (const auto* run = std::get_if<logs::RunRecord>(&record);
             run != nullptr && source == RecordSource::kProbe) {
    StackTarget target = stack_target_of(*run);
    target.rank = rank;
    stack_targets_[rank] = std::move(target);
  } else if (const auto* coll = std::get_if<logs::CollectiveRecord>(&record)) {
    logs::CollectiveRecord entry = *coll;
    entry.at.rank = rank;
    ledgers_[rank].add(entry);
  }
  const Clock::time_point logged =
      line_clock_.place(rank, logs::origin_of(record).t, now, now_wall);
  ProgressEvent observed = observation_of(record, rank, logged);
  observed.wall = logs::origin_of(record).t;
  watchdog_.observe(observed);
}

void Execution::follow_log_files(bool at_end) {
  // A poll reads up to kChunksPerPoll chunks of each file, so one flooding rank does not starve
  // the watchdog; at the end every file is read to its end before anything is judged (a rank
  // writing 25 MB/s was judged on the first 4 MiB a poll read: "no `done` event").
  constexpr std::size_t kChunk = std::size_t{4} << 20;
  constexpr int kChunksPerPoll = 16;
  const Clock::time_point now = clock_.now();
  const double now_wall = clock_.wall_seconds();
  for (RankLogFile& file : log_files_) {
    auto handle_records = [&] {
      for (const logs::Record& record : scratch_) {
        const int rank = logs::origin_of(record).rank;
        observe(record, rank < 0 ? file.rank : rank, now, now_wall, file.source);
        if (file.source == RecordSource::kStderr) {
          if (const auto* text = std::get_if<logs::TextLine>(&record)) {
            if (note_stderr_line(nullptr, file.rank, true, text->text)) continue;
          }
        }
        if (on_record_) on_record_(record, file.source);
      }
    };
    bool pending = true;
    for (int chunk = 0; pending && (at_end || chunk < kChunksPerPoll); ++chunk) {
      file_bytes_.clear();
      scratch_.clear();
      const std::size_t read = file.tail.read(file_bytes_, kChunk);
      pending = read >= kChunk;
      if (read > 0) file.stream.feed(file_bytes_, scratch_);
      handle_records();
    }
    if (pending) {
      // Bytes not read yet are bytes the rank wrote: a rank the reader is behind is never
      // silent, whatever the times of the lines read so far (they are placed in the past).
      ProgressEvent output;
      output.rank = file.rank;
      output.time = clock_.now();
      watchdog_.observe(output);
    }
    if (at_end) {
      scratch_.clear();
      file.stream.finish(scratch_);
      handle_records();
    }
  }
}

void Execution::on_output(int spec_rank, proc::Stream stream, std::string_view bytes) {
  auto it = by_spec_rank_.find(spec_rank);
  if (it == by_spec_rank_.end()) return;
  LiveProcess& live = live_[it->second];
  if (!live.first_output) live.first_output = clock_.now();
  if (stream == proc::Stream::kStderr && elastic_agent(plan_.launcher, plan_.world_size)) {
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
    // one process (torchrun's own messages) it is nobody's progress. Under slurm+torchrun
    // srun's label names a node's agent, not a rank: ranks speak through their own files.
    if (rank < 0 && ranks.size() == 1) rank = ranks.front();
    if (plan_.launcher == LauncherKind::kSlurmTorchrun) rank = -1;
    const bool known = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
    // torchrun's console copy of a worker's stdout: the worker's own file, read complete,
    // carries the same lines.
    if (known && stream == proc::Stream::kStdout && !plan_.torchrun_log_dir.empty()) continue;
    // accelerate's agent copies stderr to the console too (--tee 3): stderr.log has it.
    if (known && plan_.launcher == LauncherKind::kAccelerate && !plan_.torchrun_log_dir.empty())
      continue;
    if (known) {
      observe(record, rank, now, now_wall,
              stream == proc::Stream::kStdout ? RecordSource::kStdout : RecordSource::kStderr);
    }
    if (stream == proc::Stream::kStderr) {
      if (const auto* text = std::get_if<logs::TextLine>(&record)) {
        if (note_stderr_line(&live, rank, known, text->text)) continue;
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
  for (int rank : ranks_of(live)) watchdog_.rank_exited(rank);
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
  if (elastic_agent(plan_.launcher, plan_.world_size)) attribute_torchrun_failure(live, failure);
  if (uses_slurm(plan_.launcher)) {
    attribute_srun_failure(live.srun, plan_, placements_, rank_errors_, failure);
  }
  if (auto placed = placements_.find(failure.rank); placed != placements_.end()) {
    if (failure.node.empty()) failure.node = placed->second.node;
  }
  failures_.push_back(std::move(failure));
}

bool Execution::note_stderr_line(LiveProcess* live, int rank, bool known, const std::string& text) {
  if (auto placement = parse_placement_line(text)) {
    placements_[placement->rank] = *placement;
    return true;
  }
  if (live != nullptr && uses_slurm(plan_.launcher) && live->srun.add(text)) {
    live->process_error.add(text);
  } else if (known) {
    rank_errors_[rank].add(text);
  } else if (live != nullptr) {
    live->process_error.add(text);
  }
  return false;
}

std::vector<int> Execution::ranks_of(const LiveProcess& live) const {
  // Torchrun agents of several nodes number themselves at the rendezvous: a worker's placement
  // names its agent (its parent), which says whose ranks an agent really carries.
  if (plan_.launcher == LauncherKind::kTorchrun && plan_.nnodes > 1) {
    std::vector<int> ranks;
    for (const auto& [rank, p] : placements_) {
      if (p.parent == live.pid) ranks.push_back(rank);
    }
    if (!ranks.empty()) return ranks;
  }
  return live.planned->ranks;
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
  // Workers of several agents write their own stderr files (bigmac-rank-env --output).
  if (auto own = rank_errors_.find(cause->rank);
      own != rank_errors_.end() && !own->second.best().empty()) {
    failure.first_error_line = own->second.best();
  }
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
  if (past_bound_) return RunStatus::kBounded;
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
      const std::pair<const std::filesystem::path*, RecordSource> files[] = {
          {&r.log_path, RecordSource::kLogFile},
          {&r.stdout_path, RecordSource::kStdout},
          {&r.stderr_path, RecordSource::kStderr}};
      for (const auto& [path, source] : files) {
        if (path->empty()) continue;
        log_files_.push_back(RankLogFile{r.rank, LogFileTail(*path),
                                         logs::LogStream(options_.format, r.rank, options_.fields),
                                         source});
      }
      if (!plan_.torchrun_log_dir.empty()) {
        const std::pair<const char*, RecordSource> worker_files[] = {
            {"stdout.log", RecordSource::kStdout}, {"stderr.log", RecordSource::kStderr}};
        for (const auto& [name, source] : worker_files) {
          auto locate = [dir = plan_.torchrun_log_dir, local = r.local_rank, file = name] {
            return torchrun_worker_file(dir, local, file);
          };
          log_files_.push_back(
              RankLogFile{r.rank, LogFileTail(std::function<std::filesystem::path()>(locate)),
                          logs::LogStream(options_.format, r.rank, options_.fields), source});
        }
      }
      if (!r.probe_path.empty()) {
        // The probe writes bigmac-log JSON whatever format the trainer's own lines have.
        log_files_.push_back(RankLogFile{r.rank, LogFileTail(r.probe_path),
                                         logs::LogStream(logs::LogFormat::kBigmac, r.rank),
                                         RecordSource::kProbe});
      }
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
    if (uses_slurm(plan_.launcher)) note_cleanup(cancel_slurm_job(plan_, placements_));
    RunResult result = finish(RunStatus::kLaunchFailed);
    result.launch_error = launch_error;
    return result;
  }

  std::optional<RunStatus> status;
  while (!(status = verdict_now())) {
    const Clock::time_point now = clock_.now();
    if (options_.on_poll) options_.on_poll(watchdog_.quietest(now));
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
  if ((*status == RunStatus::kStalled || *status == RunStatus::kInterrupted) &&
      options_.stacks_wait.count() > 0) {
    // Where every live rank is, asked before teardown: at a stall the one elsewhere is the
    // culprit; at Ctrl-C the user learns where the run was.
    std::map<int, StackTarget> asked;
    for (const auto& [rank, target] : stack_targets_) {
      if (auto s = at_stop_.find(rank); s != at_stop_.end() && !s->second.exited)
        asked.emplace(rank, target);
    }
    std::vector<pid_t> roots;
    for (const LiveProcess& live : live_) {
      if (live.pid > 0 && !live.exit) roots.push_back(live.pid);
    }
    stacks_ = request_stacks(asked, roots, options_.stacks_wait);
  }
  const bool stopped_running = runner_.running() > 0;
  for (const proc::RankExit& e : runner_.terminate(options_.term_grace, sink)) on_exit(e, true);
  if (uses_slurm(plan_.launcher) && (stopped_running || *status != RunStatus::kSucceeded)) {
    note_cleanup(cancel_slurm_job(plan_, placements_));
  }
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
  result.cleanup_problems = cleanup_problems_;
  result.process_group = runner_.process_group();
  result.duration = clock_.now() - start_;
  result.failures = failures_;
  std::stable_sort(result.failures.begin(), result.failures.end(),
                   [](const ProcessFailure& a, const ProcessFailure& b) { return a.at < b.at; });
  if (!result.failures.empty()) result.root_cause = result.failures.front();
  if (status == RunStatus::kStalled) {
    result.stalls = last_verdict_.stalls;
    attribute_stalls(result.stalls, stacks_, ledgers_);
    result.stacks = stacks_;
  } else if (status == RunStatus::kInterrupted) {
    for (const RankStack& st : stacks_) {
      std::string place = fmt::format("rank {}: main thread {}", st.rank, st.summary());
      if (auto l = ledgers_.find(st.rank); l != ledgers_.end())
        place += "; last collective " + l->second.current.describe();
      result.interrupted_at.push_back(std::move(place));
    }
    result.stacks = stacks_;
  }
  result.non_finite = last_verdict_.non_finite;
  result.stop_reason = stop_reason_;
  if (status == RunStatus::kBounded) result.bound_step = past_bound_;
  // Each rank once, with the process that carried it (agents' placements first).
  std::map<int, const LiveProcess*> carrier;
  for (const LiveProcess& live : live_) {
    for (int rank : ranks_of(live)) carrier.emplace(rank, &live);
  }
  for (const LiveProcess& live : live_) {
    for (int rank : live.planned->ranks) carrier.emplace(rank, &live);
  }
  for (const auto& [rank, carried_by] : carrier) {
    const LiveProcess& live = *carried_by;
    RankOutcome o;
    o.rank = rank;
    o.pid = live.pid;
    o.exit = live.exit;
    o.stopped_by_us = live.stopped_by_us;
    auto own = rank_errors_.find(rank);
    if (own != rank_errors_.end()) {
      o.first_error_line = own->second.best();
      o.error_lines = own->second.last_lines();
    }
    if (o.first_error_line.empty() && elastic_agent(plan_.launcher, plan_.world_size)) {
      o.first_error_line = torchrun_rank_error_line(plan_.log_dir / "torchrun", rank);
    }
    if (o.first_error_line.empty()) o.first_error_line = live.process_error.best();
    if (auto placed = placements_.find(rank); placed != placements_.end()) {
      o.node = placed->second.node;
    }
    if (uses_slurm(plan_.launcher)) {
      apply_srun_report(live.srun, plan_, placements_, result.root_cause, o);
    }
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
  for (const LiveProcess& live : live_) {
    for (const std::string& node : live.srun.failed_nodes()) result.failed_nodes.push_back(node);
    for (const std::string& line : live.srun.node_failure_lines()) {
      result.node_failure_lines.push_back(line);
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
  } else if (std::holds_alternative<logs::DoneRecord>(record)) {
    o.kind = ProgressKind::kDone;
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
