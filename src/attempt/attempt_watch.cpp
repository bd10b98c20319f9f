#include "attempt/attempt_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "attempt/earlier_checkpoints.h"
#include "launch/plan_execution.h"
#include "launch/process_record.h"
#include "logs/probe_merge.h"
#include "proc/signal_name.h"
#include "report/step_comparison.h"

namespace bigmac::attempt {

logs::RankLog AttemptWatch::rank_log(int rank, Moment moment) const {
  const auto file = from_file.find(rank);
  const auto streams = from_streams.find(rank);
  logs::RankLog out;
  if (file != from_file.end()) {
    out = file->second;
    // The streams still carry what the trainer did not write to its file: tracebacks,
    // launcher and library lines.
    if (streams != from_streams.end()) {
      for (const logs::TextLine& line : streams->second.context.lines()) out.context.add(line);
    }
  } else if (streams != from_streams.end()) {
    out = streams->second;
  }
  out.rank = rank;
  out.sources = {fmt::format("rank{}.log", rank)};
  if (step_bound > 0) {
    // A trainer that prints a step's loss before its optimizer step prints one more line
    // than the bound lets it run; a program without the probe runs on until stopped.
    std::erase_if(out.steps,
                  [&](const logs::StepRecord& s) { return s.global_step >= step_bound; });
    std::erase_if(out.heartbeats,
                  [&](const logs::HeartbeatRecord& h) { return h.global_step >= step_bound; });
  }
  if (const auto probe = from_probe.find(rank); probe != from_probe.end()) {
    logs::RankLog probe_log = probe->second;
    probe_log.sources = {fmt::format("probe-rank{}.jsonl", rank)};
    logs::resolve_chain_stages(probe_log, from_probe);
    logs::ProbeMerge how;
    how.model_parallel = model_parallel;
    how.data_parallel = data_parallel;
    bool trainer_records = false;
    for (const auto* by_rank : {&from_file, &from_streams}) {
      for (const auto& [other, log] : *by_rank) {
        if (other != rank && !log.steps.empty()) how.steps_logged_elsewhere = true;
        trainer_records |= log.records > 0;
      }
    }
    // A probe step judged before the trainer's own line of that step is read would put the
    // probe's value (the applied, clipped grad_norm) where the trainer's goes.
    if (moment == Moment::kLive && trainer_records) how.steps_logged_elsewhere = true;
    const bool trainer_silent = !how.steps_logged_elsewhere && out.steps.empty();
    out = logs::merge_probe_log(std::move(out), std::move(probe_log), how);
    // The probe alone with several ranks: the loss rank (0 unless trainer.loss_rank says
    // otherwise) owns the run's values, combined from every rank's. Another rank's own values
    // are not the run's: were they kept, a live judgement made before the loss rank logged the
    // step would take that rank for the owner.
    if (trainer_silent && (model_parallel > 1 || data_parallel > 1)) {
      std::vector<const logs::RankLog*> ranks;
      std::map<int, logs::RankLog> chained;  // a hand-written pipeline's, stages counted
      for (const auto& [other, log] : from_probe) {
        if (log.layouts.empty() || log.layouts.front().stage >= 0) {
          ranks.push_back(&log);
          continue;
        }
        logs::RankLog copy = log;
        logs::resolve_chain_stages(copy, from_probe);
        ranks.push_back(&chained.emplace(other, std::move(copy)).first->second);
      }
      if (rank != loss_rank) {
        for (logs::StepRecord& s : out.steps) {
          s.loss.reset();
          if (model_parallel > 1) s.grad_norm.reset();
        }
        out.field_sources.erase("loss");
        if (model_parallel > 1) out.field_sources.erase("grad_norm");
      } else if (model_parallel == 1) {
        logs::average_replica_losses(out, ranks, static_cast<std::size_t>(data_parallel));
      } else {
        logs::combine_stage_values(out, ranks, stage_combination());
      }
      // Each stage's probe counts its own parameters and sees its own input: the model and the
      // batch every rank must report are the stages' together (docs/pipelines.md).
      if (model_parallel > 1) logs::combine_stage_structure(out, ranks, stage_combination());
    }
  }
  return out;
}

void AttemptWatch::configure(const config::Config& cfg) {
  model_parallel = cfg.parallel.pp_size * cfg.parallel.tp_size;
  step_bound = cfg.train.max_steps;
  data_parallel = cfg.derived.dp;
  tensor_parallel = cfg.parallel.tp_size;
  loss_rank = cfg.trainer.loss_rank < cfg.derived.world_size ? cfg.trainer.loss_rank : 0;
}

logs::StageCombination AttemptWatch::stage_combination() const {
  logs::StageCombination how;
  how.ranks = static_cast<std::size_t>(std::max(1, model_parallel) * std::max(1, data_parallel));
  how.replicas = static_cast<std::size_t>(std::max(1, data_parallel));
  if (tensor_parallel > 1) {
    how.grad_norm_unknown =
        "with tensor parallelism the ranks' norms do not add up (replicated weights)";
    return how;
  }
  if (model_param_count <= 0) {
    how.grad_norm_unknown =
        "no baseline parameter count to tell whether a weight sits on two "
        "stages";
    return how;
  }
  std::int64_t held = 0;
  std::size_t counted = 0;
  for (const auto& [rank, log] : from_probe) {
    if (const logs::ModelRecord* m = log.model(); m && m->param_count > 0) {
      held += m->param_count;
      ++counted;
    }
  }
  if (counted != how.ranks) {
    how.grad_norm_unknown =
        fmt::format("{} of {} ranks logged their parameter count", counted, how.ranks);
    return how;
  }
  held /= static_cast<std::int64_t>(how.replicas);
  if (held != model_param_count) {
    how.grad_norm_unknown = fmt::format(
        "the stages hold {} parameters, the model {}: a weight on two stages (a tied embedding "
        "and head) would be counted twice",
        held, model_param_count);
    return how;
  }
  how.grad_norm = true;
  return how;
}

AttemptWatch launch_and_watch(const AttemptPlan& plan, const Reference* reference,
                              const std::filesystem::path& run_dir, AttemptServices& services) {
  AttemptWatch watch;
  watch.started_at = services.wall_time();
  const config::Config& cfg = plan.gate.config;
  watch.configure(cfg);
  watch.earlier_checkpoints = earlier_checkpoints(run_dir, plan.dir);
  if (reference && reference->baseline.structure.param_count) {
    watch.model_param_count = *reference->baseline.structure.param_count;
  }
  std::set<int> ranks_seen;
  std::set<int> ranks_started;  // past rendezvous: logged pg_ready or a step
  const std::unique_ptr<proc::ProcessRunner> runner = services.make_runner();
  launch::RunOptions options = launch::run_options_for(cfg.launch);
  options.cancel = services.cancel;
  options.process_record = run_dir / launch::kProcessRecordName;
  options.format = plan.parser.format;
  options.fields = plan.parser.custom();
  // The step bound: with the probe on, it ends each rank cleanly before step max_steps; a
  // trainer without it (or one whose optimizer the probe cannot see) is stopped here once a
  // rank logs a step past the gate's count. Two steps of grace leave the probe its clean end.
  options.stop_at_step = std::int64_t{cfg.train.max_steps} + (cfg.trainer.probe ? 2 : 0);
  options.bound_by_probe = cfg.trainer.probe;
  if (gates::stops_on_divergence(*plan.spec)) {
    options.stop_request = [&]() -> std::optional<std::string> {
      // Not before every rank is past forming its group (pg_ready or a step): a rank still
      // starting may explain what the others show (a program that is not distributed looks like
      // a gradient mismatch on rank 0 until every rank's first step shows it trains alone).
      if (static_cast<int>(ranks_started.size()) < plan.gate.nproc) return std::nullopt;
      gates::GateEvidence so_far;
      so_far.earlier_checkpoints = watch.earlier_checkpoints;
      so_far.loss_rank = watch.loss_rank;
      for (int rank : ranks_seen) {
        so_far.add_rank_log(watch.rank_log(rank, AttemptWatch::Moment::kLive), gates::RankEnding{});
      }
      auto certain = gates::certain_failure(*plan.spec, plan.gate, so_far,
                                            reference ? &reference->baseline : nullptr);
      if (!certain) return std::nullopt;
      // Not before every rank that logs steps (all of them under the probe) has logged that
      // step: the invariants of the step (replicas in sync, distinct samples) come before any
      // comparison with the baseline, and need each replica's record. A rank that hangs before
      // it is the watchdog's.
      // Before the first step, the facts every rank logs before it (its `model` event) come
      // from all of them: which replica differs from which.
      const bool models_logged = std::any_of(so_far.ranks.begin(), so_far.ranks.end(),
                                             [](const auto& r) { return !r.models.empty(); });
      if (certain->step < 0 && models_logged && cfg.trainer.probe) {
        for (const gates::RankEvidence& r : so_far.ranks) {
          if (r.models.empty()) return std::nullopt;
        }
      }
      if (certain->step >= 0) {
        for (const gates::RankEvidence& r : so_far.ranks) {
          if (r.steps.empty() && !cfg.trainer.probe) continue;
          const bool reached = std::any_of(r.steps.begin(), r.steps.end(), [&](const auto& s) {
            return s.global_step >= certain->step;
          });
          if (!reached) return std::nullopt;
        }
      }
      watch.certain = std::move(certain);
      return watch.certain->check + ": " + watch.certain->message;
    };
  }
  options.on_poll = [&](const std::optional<launch::Watchdog::Quietest>& quietest) {
    if (!quietest) {
      services.progress->tick(std::nullopt);
      return;
    }
    services.progress->tick(report::Progress::Silence{
        quietest->rank, std::chrono::duration<double>(quietest->silent).count(),
        std::chrono::duration<double>(quietest->limit).count()});
  };
  watch.result = launch::execute_plan(
      plan.launch, *runner, *services.clock, options,
      [&](const logs::Record& record, launch::RecordSource source) {
        const int rank = std::max(0, logs::origin_of(record).rank);
        auto& by_rank = source == launch::RecordSource::kLogFile ? watch.from_file
                        : source == launch::RecordSource::kProbe ? watch.from_probe
                                                                 : watch.from_streams;
        by_rank[rank].add(record);
        if (std::holds_alternative<logs::PgReadyRecord>(record) ||
            std::holds_alternative<logs::StepRecord>(record)) {
          ranks_started.insert(rank);
        }
        if (ranks_seen.insert(rank).second) {
          services.progress->ranks_up(static_cast<int>(ranks_seen.size()));
        }
        const bool probe_echo =
            source == launch::RecordSource::kProbe &&
            (!watch.from_file[rank].steps.empty() || !watch.from_streams[rank].steps.empty());
        if (const auto* step = std::get_if<logs::StepRecord>(&record); step && !probe_echo) {
          // A replica's probe measures its own micro-batches' loss, not the run's (the mean
          // over the replicas, rank_log): the line shows the step alone.
          const bool replica_loss =
              source == launch::RecordSource::kProbe && watch.data_parallel > 1;
          services.progress->step(
              step->global_step, replica_loss ? std::nullopt : step->loss,
              report::baseline_loss_at(reference ? &reference->baseline : nullptr,
                                       step->global_step));
        }
      });
  return watch;
}

gates::GateEvidence gather_evidence(const AttemptWatch& watch) {
  gates::GateEvidence evidence;
  evidence.earlier_checkpoints = watch.earlier_checkpoints;
  evidence.loss_rank = watch.loss_rank;
  for (const launch::RankOutcome& outcome : watch.result.ranks) {
    evidence.add_rank_log(watch.rank_log(outcome.rank), launch::ending_of(outcome, watch.result));
  }
  return evidence;
}

}  // namespace bigmac::attempt
