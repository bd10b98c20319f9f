#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "baseline/replica_sync.h"
#include "diagnose/rule_finding.h"
#include "logs/ledger.h"
#include "proc/signal_name.h"

namespace bigmac::diagnose::detail {
namespace {

void process_group(const MetricInput& in, std::vector<Finding>& out) {
  std::map<int, Sourced<logs::RunRecord>> runs;
  int world = 0;
  for (const auto& r : all_of<logs::RunRecord>(in.logs)) {
    if (r.record->world_size > 1) {
      runs.emplace(r.record->at.rank, r);
      world = std::max(world, r.record->world_size);
    }
  }
  if (runs.empty()) return;
  // A rank that formed its group says so with pg_ready; one that trains or heartbeats formed it
  // even if its trainer does not log pg_ready.
  std::set<int> ready;
  for (const auto& p : all_of<logs::PgReadyRecord>(in.logs)) ready.insert(p.record->at.rank);
  for (const auto& s : all_of<logs::StepRecord>(in.logs)) ready.insert(s.record->at.rank);
  for (const auto& h : all_of<logs::HeartbeatRecord>(in.logs)) ready.insert(h.record->at.rank);
  for (const auto& m : all_of<logs::MicroBatchRecord>(in.logs)) ready.insert(m.record->at.rank);
  std::vector<std::string> missing;
  Finding f{"process_group_not_formed", {}, {}, -1};
  for (const auto& [rank, run] : runs) {
    if (ready.count(rank) != 0) continue;
    missing.push_back(std::to_string(rank));
    f.evidence.push_back(
        evidence_of(run, fmt::format("ev=run world_size={} backend={} (no pg_ready follows)",
                                     run.record->world_size, run.record->backend)));
    if (f.failed_rank < 0) f.failed_rank = rank;
  }
  if (missing.empty()) return;
  f.values = {{"missing", fmt::format("{}", fmt::join(missing, ", "))},
              {"world_size", std::to_string(world)}};
  out.push_back(std::move(f));
}

// Several ranks, each trained under the probe, none called init_process_group (the probe sees
// the call): the program is not distributed, whatever launched it.
void not_distributed(const MetricInput& in, std::vector<Finding>& out) {
  if (in.logs.size() < 2) return;
  if (in.launch != nullptr && in.launch->planned_world_size > 0 &&
      static_cast<int>(in.logs.size()) < in.launch->planned_world_size) {
    return;  // a rank that never started may have been the one to form the group
  }
  Finding f{"program_not_distributed", {}, {}, -1};
  for (const logs::RankLog& log : in.logs) {
    if (!log.probe_ran || !log.pg_ready.empty()) return;
    Evidence e;
    e.rank = log.rank;
    e.file = log.label();
    if (!log.step_digests.empty()) {
      e.line = log.step_digests.front().at.line;
      e.t = log.step_digests.front().at.t;
      e.text = fmt::format("rank {} step {} without a process group", log.rank,
                           log.step_digests.front().step);
    } else if (!log.steps.empty()) {
      e.line = log.steps.front().at.line;
      e.t = log.steps.front().at.t;
      e.text = fmt::format("rank {} step {} without a process group", log.rank,
                           log.steps.front().global_step);
    } else {
      return;
    }
    f.evidence.push_back(std::move(e));
  }
  f.values = {{"ranks", std::to_string(in.logs.size())}};
  out.push_back(std::move(f));
}

// A rank loaded a checkpoint an earlier gate of the run wrote: the gate continues that run.
void resumed_checkpoint(const MetricInput& in, std::vector<Finding>& out) {
  if (in.earlier_checkpoints == nullptr || in.earlier_checkpoints->empty()) return;
  for (const logs::RankLog& log : in.logs) {
    for (const logs::LoadRecord& l : log.loads) {
      auto it = in.earlier_checkpoints->find(l.path);
      if (it == in.earlier_checkpoints->end()) continue;
      Evidence e;
      e.rank = log.rank;
      e.file = log.label();
      e.line = l.at.line;
      e.t = l.at.t;
      e.text = fmt::format("rank {} loaded {} before step {}", log.rank, l.path, l.global_step);
      out.push_back({"resumed_earlier_checkpoint",
                     {{"path", l.path}, {"writer", it->second}, {"rank", std::to_string(log.rank)}},
                     {std::move(e)},
                     log.rank});
      return;
    }
  }
}

// The initial parameters differ from the baseline's, and the probe saw no torch.manual_seed
// before the model was built: every run starts from other parameters.
void unseeded_model(const MetricInput& in, std::vector<Finding>& out) {
  if (in.baseline == nullptr || in.baseline->structure.param_digest.empty()) return;
  for (const logs::RankLog& log : in.logs) {
    for (const logs::ModelRecord& m : log.models) {
      if (m.seed_note.empty() || m.param_digest.empty() ||
          m.param_digest == in.baseline->structure.param_digest) {
        continue;
      }
      Evidence e;
      e.rank = log.rank;
      e.file = log.label();
      e.line = m.at.line;
      e.t = m.at.t;
      e.text =
          fmt::format("ev=model param_digest={} seed_note=\"{}\"", m.param_digest, m.seed_note);
      out.push_back(
          {"model_unseeded",
           {{"digest", m.param_digest}, {"baseline_digest", in.baseline->structure.param_digest}},
           {std::move(e)},
           log.rank});
      return;
    }
  }
}

// The data-parallel invariants (baseline/replica_sync.h, the checks' own judgement): replicas
// whose parameters drift apart, replicas that read the same micro-batch.
void replica_invariants(const MetricInput& in, std::vector<Finding>& out) {
  std::map<int, std::vector<const logs::RankLog*>> by_stage;
  for (const logs::RankLog& log : in.logs) {
    if (!log.pg_ready.empty() || !log.probe_ran) {
      by_stage[log.layouts.empty() ? 0 : log.layouts.front().stage].push_back(&log);
    }
  }
  auto evidence = [&](const baseline::RankDigest& d, std::int64_t step, const char* what) {
    Evidence e;
    e.rank = d.rank;
    e.line = d.at.line;
    e.t = d.at.t;
    e.text = fmt::format("rank {} step {}: {} {:016x}", d.rank, step, what, d.digest);
    return e;
  };
  for (const auto& [stage, replicas] : by_stage) {
    if (replicas.size() < 2) continue;
    // Before any step: the replicas' first `model` digests (taken where the optimizer is made,
    // after a DDP wrap has broadcast rank 0's parameters) already differ.
    const logs::RankLog* first = nullptr;
    for (const logs::RankLog* log : replicas) {
      if (log->models.empty() || log->models.front().param_digest.empty()) continue;
      if (first == nullptr) {
        first = log;
        continue;
      }
      const logs::ModelRecord& a = first->models.front();
      const logs::ModelRecord& b = log->models.front();
      if (a.param_digest == b.param_digest) continue;
      auto model_evidence = [](const logs::RankLog& l, const logs::ModelRecord& m) {
        Evidence e;
        e.rank = l.rank;
        e.file = l.label();
        e.line = m.at.line;
        e.t = m.at.t;
        e.text = fmt::format("ev=model param_digest={}", m.param_digest);
        return e;
      };
      out.push_back({"replicas_start_apart",
                     {{"rank_a", std::to_string(first->rank)},
                      {"digest_a", a.param_digest},
                      {"rank_b", std::to_string(log->rank)},
                      {"digest_b", b.param_digest}},
                     {model_evidence(*first, a), model_evidence(*log, b)},
                     log->rank});
      break;
    }
    if (const auto p = baseline::scan_params_in_sync(replicas).first) {
      out.push_back(
          {"replicas_diverged",
           {{"step", std::to_string(p->step)},
            {"rank_a", std::to_string(p->a.rank)},
            {"rank_b", std::to_string(p->b.rank)}},
           {evidence(p->a, p->step, "param_digest"), evidence(p->b, p->step, "param_digest")},
           p->b.rank});
    }
    if (stage == by_stage.begin()->first && in.baseline != nullptr) {
      const baseline::SampleCoverage cov =
          baseline::cover_samples(replicas, in.baseline->steps, in.baseline->structure.input_shape);
      if (cov.count_differs) {
        const baseline::StepSamples& s = *cov.count_differs;
        Evidence e;
        e.rank = s.at.rank;
        e.line = s.at.line;
        e.t = s.at.t;
        e.text = fmt::format("step {}: {} samples over the ranks that read input, baseline {}",
                             s.step, s.count, cov.baseline_count);
        out.push_back({s.count < cov.baseline_count ? "samples_dropped" : "samples_added",
                       {{"step", std::to_string(s.step)},
                        {"count", std::to_string(s.count)},
                        {"baseline", std::to_string(cov.baseline_count)},
                        {"missing", std::to_string(std::abs(s.count - cov.baseline_count))}},
                       {std::move(e)},
                       s.at.rank});
      } else if (cov.repeated()) {
        const baseline::RepeatedSample& r = *cov.first_repeat;
        auto read = [&](const baseline::SampleRead& at, const char* again) {
          Evidence e;
          e.rank = at.at.rank;
          e.line = at.at.line;
          e.t = at.at.t;
          e.text = fmt::format("step {}: rank {} reads sample {:016x}{}", at.step, at.rank, r.hash,
                               again);
          return e;
        };
        out.push_back({"samples_repeated",
                       {{"step", std::to_string(r.again.step)},
                        {"rank", std::to_string(r.again.rank)},
                        {"first_rank", std::to_string(r.first.rank)},
                        {"first_step", std::to_string(r.first.step)},
                        {"steps", std::to_string(cov.repeat_steps)},
                        {"repeats", std::to_string(cov.repeats)},
                        {"reads", std::to_string(cov.repeat_reads)},
                        {"ranks", std::to_string(replicas.size())}},
                       {read(r.first, ""), read(r.again, " again")},
                       r.again.rank});
      }
    }
    if (const auto p = baseline::scan_duplicate_inputs(replicas).first) {
      out.push_back(
          {"duplicate_samples",
           {{"step", std::to_string(p->step)},
            {"rank_a", std::to_string(p->a.rank)},
            {"rank_b", std::to_string(p->b.rank)}},
           {evidence(p->a, p->step, "input_digest"), evidence(p->b, p->step, "input_digest")},
           p->b.rank});
    }
  }
}

// Where a stalled rank was, in the words of its stall: its step, then its place in the ledger
// and its main thread when the watchdog had them.
std::string stalled_where(const launch::Stall& stall) {
  std::string where = stall.before_rendezvous ? "before rendezvous (init_process_group)"
                      : stall.began_step      ? fmt::format("in step {}", *stall.began_step)
                      : stall.last_step       ? fmt::format("after step {}", *stall.last_step)
                                              : "after rendezvous";
  if (!stall.collective.empty()) where += "; " + stall.collective;
  if (!stall.stack.empty()) where += "; main thread " + stall.stack;
  return where;
}

double idle_seconds(const launch::Stall& stall) {
  return std::chrono::duration<double>(stall.silent_for).count();
}

void launch_facts(const MetricInput& in, std::vector<Finding>& out) {
  if (in.launch == nullptr) return;
  const LaunchFacts& facts = *in.launch;
  if (facts.port_holder) {
    const HeldPort& h = *facts.port_holder;
    out.push_back(
        {"port_held_by_process",
         {{"port", std::to_string(h.port)}, {"pid", std::to_string(h.pid)}, {"command", h.command}},
         {launcher_evidence(
             -1, fmt::format("port {} is held by pid {} ({})", h.port, h.pid, h.command))},
         -1});
  }
  if (facts.planned_world_size > 0 && facts.processes_started > 0 &&
      facts.planned_world_size > facts.processes_started) {
    out.push_back(
        {"world_size_exceeds_processes",
         {{"planned", std::to_string(facts.planned_world_size)},
          {"started", std::to_string(facts.processes_started)}},
         {launcher_evidence(-1, fmt::format("WORLD_SIZE={} with {} processes started",
                                            facts.planned_world_size, facts.processes_started))},
         -1});
  }
  for (const EnvMismatch& m : facts.env_mismatches) {
    std::vector<std::string> values;
    Finding f{"env_mismatch", {}, {}, -1};
    for (const auto& [rank, value] : m.values) {
      values.push_back(fmt::format("rank {}: {}", rank, value));
      f.evidence.push_back(launcher_evidence(rank, fmt::format("{}={}", m.name, value)));
    }
    f.values = {{"name", m.name}, {"values", fmt::format("{}", fmt::join(values, ", "))}};
    out.push_back(std::move(f));
  }
  // The watchdog lists the rank that stopped first first; the others waited for it. One
  // finding, about that rank, with every stalled rank as evidence: a finding per rank let the
  // card name rank 0 while the stall list named rank 1.
  if (!facts.stalled.empty()) {
    const launch::Stall& first = facts.stalled.front();
    // The collective ledger says more than the silence when it places the first rank.
    const bool placed = (first.behind || first.desync) && !first.collective.empty();
    Finding f =
        placed ? Finding{first.behind ? "rank_behind_collective" : "collective_desync",
                         {{"rank", std::to_string(first.rank)},
                          {"idle_s", number(idle_seconds(first))},
                          {"collective", first.collective},
                          {"stack", first.stack.empty() ? "has no stack on record (only a rank "
                                                          "under the probe is asked for one)"
                                                        : "is " + first.stack}},
                         {},
                         first.rank}
               : Finding{"rank_stalled",
                         {{"rank", std::to_string(first.rank)},
                          {"where", stalled_where(first)},
                          {"idle_s", number(idle_seconds(first))}},
                         {},
                         first.rank};
    for (const launch::Stall& s : facts.stalled) {
      f.evidence.push_back(
          launcher_evidence(s.rank, fmt::format("no progress for {} s, last: {}",
                                                number(idle_seconds(s)), stalled_where(s))));
    }
    out.push_back(std::move(f));
  }
}

std::string signal_text(int signal) {
  switch (signal) {
    case 6:
      return "signal 6 (SIGABRT)";
    case 9:
      return "signal 9 (SIGKILL)";
    case 11:
      return "signal 11 (SIGSEGV)";
    case 15:
      return "signal 15 (SIGTERM)";
    default:
      return fmt::format("signal {}", signal);
  }
}

// The first rank to end badly is where the failure started; the others were stopped by it or
// timed out waiting for it.
void first_exit(const MetricInput& in, std::vector<Finding>& out) {
  if (in.launch == nullptr) return;
  const launch::RankEnding* first = nullptr;
  for (const launch::RankEnding& e : in.launch->exited) {
    // A rank the orchestrator stopped ended as a consequence; an unknown one did not end.
    if (!e.known || e.stopped || (e.exit_code.value_or(0) == 0 && e.signal.empty())) continue;
    const bool earlier = first == nullptr || (e.duration_s > 0 && first->duration_s > 0
                                                  ? e.duration_s < first->duration_s
                                                  : e.rank < first->rank);
    if (earlier) first = &e;
  }
  if (first == nullptr) return;
  // The ending names its signal ("SIGKILL", launch/rank_ending.h); "signal 77" has no number.
  const int signal = first->signal.empty() ? 0 : proc::signal_number(first->signal).value_or(-1);
  const std::string how = signal > 0   ? "was killed by " + signal_text(signal)
                          : signal < 0 ? "was killed by " + first->signal
                                       : fmt::format("exited with code {}", *first->exit_code);
  std::string detail;
  if (signal == 9) {
    detail =
        "SIGKILL comes from outside the process: usually the host's OOM killer (check dmesg) or a "
        "scheduler's memory or time limit";
  } else if (signal == 11 || signal == 6) {
    detail =
        "a native crash (segmentation fault or abort) inside the process: a library or driver "
        "fault, or memory corruption";
  } else if (signal != 0) {
    detail = "a signal from outside stopped it (a launcher, the scheduler or a user)";
  } else {
    detail = "it ended on its own with an error: the end of its log says why";
  }
  out.push_back({"rank_exited_first",
                 {{"rank", std::to_string(first->rank)}, {"how", how}, {"detail", detail}},
                 {launcher_evidence(first->rank, fmt::format("rank {} {}", first->rank, how))},
                 first->rank});
}

// A run that ended on a rank's error with no split in the ledgers, where some ranks' ledgers
// stop short of a call the others made: the others waited there for them until a backend's
// timeout (Gloo's, NCCL's watchdog) or a peer's exit ended the run. Placed first when the ranks
// that never reached it have no error of their own (diagnoser.cpp).
void ledger_gap(const MetricInput& in,
                const std::map<int, std::vector<logs::CollectiveRecord>>& ledgers,
                const std::map<int, const std::string*>& files, std::vector<Finding>& out) {
  if (in.exit_errors.empty()) return;  // a run the tool stopped: ranks are wherever it found them
  const auto gap = logs::first_gap(ledgers);
  if (!gap) return;
  const int rank = gap->missing.front();
  Finding f{"collective_never_reached", {}, {}, rank};
  f.values = {{"rank", fmt::format("{}", fmt::join(gap->missing, ", "))},
              {"ranks", gap->missing.size() == 1 ? "rank" : "ranks"},
              {"collective", gap->describe()},
              {"last", gap->last_of(rank)},
              {"step", std::to_string(gap->call.global_step)}};
  const Sourced<logs::CollectiveRecord> called{&gap->call, files.at(gap->call.at.rank)};
  f.evidence.push_back(evidence_of(called, "called " + gap->call.describe()));
  for (const int missing : gap->missing) {
    if (const auto it = gap->last.find(missing); it != gap->last.end()) {
      const Sourced<logs::CollectiveRecord> last{&it->second, files.at(missing)};
      f.evidence.push_back(evidence_of(last, "its last: " + it->second.describe()));
    }
  }
  out.push_back(std::move(f));
}

// The ranks' collective ledgers, compared whole: the first index where the calls differ. For a
// run that ended (Gloo's size check aborts one rank, the others lose their peer; NCCL's watchdog
// times out); a stall's ledger is placed by the watchdog (launch_facts) and names the same rank
// as the stall list.
void ledger_split(const MetricInput& in, std::vector<Finding>& out) {
  if (in.launch != nullptr && !in.launch->stalled.empty()) return;
  std::map<int, std::vector<logs::CollectiveRecord>> ledgers;
  std::map<int, const std::string*> files;
  for (const logs::RankLog& log : in.logs) {
    if (log.collectives.empty()) continue;
    const int rank = log.collectives.front().at.rank;
    auto& mine = ledgers[rank];
    mine.insert(mine.end(), log.collectives.begin(), log.collectives.end());
    files[rank] = &log.label();
  }
  if (ledgers.size() < 2) return;
  const auto split = logs::first_split(ledgers);
  if (!split) {
    ledger_gap(in, ledgers, files, out);
    return;
  }
  std::vector<std::string> sites;
  Finding f{"collective_split", {}, {}, split->odd.front()};
  std::int64_t step = -1;
  for (const logs::CollectiveRecord& c : split->calls) {
    if (!c.site.empty() && std::find(sites.begin(), sites.end(), c.site) == sites.end())
      sites.push_back(c.site);
    if (step < 0) step = c.global_step;
    const Sourced<logs::CollectiveRecord> at{&c, files[c.at.rank]};
    f.evidence.push_back(evidence_of(at, "called " + c.describe()));
  }
  // The odd call out, or with no majority every rank there.
  const std::string odd =
      split->odd.size() == 1
          ? fmt::format("rank {} made another call there than the others", split->odd.front())
      : split->odd.size() == split->calls.size()
          ? fmt::format("ranks {} made different calls there", fmt::join(split->odd, " and "))
          : fmt::format("ranks {} made another call there than the others",
                        fmt::join(split->odd, ", "));
  f.values = {{"odd", odd},
              {"collective", split->describe()},
              {"step", std::to_string(step)},
              {"kind", split->different_ops ? "different collectives"
                                            : "the same collective with different shapes"},
              {"sites", fmt::format("{}", fmt::join(sites, " and "))}};
  out.push_back(std::move(f));
}

}  // namespace

void launch_rules(const MetricInput& in, std::vector<Finding>& out) {
  ledger_split(in, out);
  process_group(in, out);
  not_distributed(in, out);
  resumed_checkpoint(in, out);
  unseeded_model(in, out);
  replica_invariants(in, out);
  launch_facts(in, out);
  first_exit(in, out);
}

}  // namespace bigmac::diagnose::detail
