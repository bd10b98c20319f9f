#include "adopt/program_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace bigmac::adopt {
namespace {

// Optimizer steps the trial ran: the probe's count when it saw the optimizer, else the trainer's
// own step lines.
std::int64_t steps_run(const TrialLogs& logs) {
  if (!logs.probe.steps.empty()) return static_cast<std::int64_t>(logs.probe.steps.size());
  return static_cast<std::int64_t>(logs.trainer.steps.size());
}

bool bounded_by_probe(const TrialLogs& logs) {
  const logs::DoneRecord* done = logs.probe.done();
  return done && done->bounded;
}

std::optional<std::int64_t> first_batch(const logs::RankLog& probe) {
  const logs::BatchRecord* b = probe.batch();
  if (!b || b->input_shape.empty() || b->input_shape.front() <= 0) return std::nullopt;
  return b->input_shape.front();
}

std::optional<std::int64_t> first_loss_count(const logs::RankLog& probe) {
  for (const logs::StepRecord& s : probe.steps) {
    for (const auto& [name, value] : s.extra) {
      if (name == "loss_count" && value >= 1) return static_cast<std::int64_t>(value);
    }
  }
  return std::nullopt;
}

// The stages the probe read in the two processes (docs/pipelines.md): their count against the
// world size, their schedule (from the schedule object, else from the order of the passes),
// their micro-batches and the layers they hold.
void measure_stages(const TrialLogs& one, const std::vector<TrialLogs>& two, ProgramModel& model) {
  std::set<int> stages;
  int num_stages = 0;
  int last_layer = -1;
  std::set<std::string> schedules;
  std::map<std::pair<int, std::int64_t>, int> forwards;  // (stage, step) -> F passes
  for (const TrialLogs& rank : two) {
    for (const logs::LayoutRecord& l : rank.probe.layouts) {
      stages.insert(l.stage);
      num_stages = std::max(num_stages, l.num_stages);
      last_layer = std::max(last_layer, l.last_layer);
      if (!l.schedule.empty()) schedules.insert(l.schedule);
    }
    for (const logs::MicroBatchRecord& m : rank.probe.micro_batches) {
      if (m.phase == 'F') ++forwards[{m.stage, m.global_step}];
    }
  }
  if (stages.empty()) return;
  model.stages = true;
  model.stages_evidence = fmt::format(
      "the probe read {} pipeline stages ({} of them) in the two processes' "
      "torch.distributed.pipelining schedule",
      stages.size(), num_stages);
  const bool one_stage = one.probe.layouts.size() == 1 && one.probe.layouts[0].num_stages == 1;
  if (num_stages == static_cast<int>(two.size()) && one_stage) {
    model.stage_per_process = true;
    model.stages_evidence +=
        fmt::format(": one stage with one process, {} with {}: every process is a stage",
                    num_stages, two.size());
  }
  if (schedules.size() == 1) {
    model.schedule = *schedules.begin();
    model.schedule_evidence = "the stages ran under " + *schedules.begin();
  }
  std::set<int> counts;
  for (const auto& [key, count] : forwards) counts.insert(count);
  if (counts.size() == 1) model.micro_batches = *counts.begin();
  if (last_layer >= 0) {
    model.num_layers = last_layer + 1;
    model.layers_evidence = fmt::format(
        "the probe read the stages' layers from their parameter names: the last stage ends at "
        "layer {}",
        last_layer);
  }
}

}  // namespace

void measure_steps(std::int64_t asked, std::int64_t bound, bool has_flag, const std::string& flag,
                   const TrialRun& run, const TrialLogs& logs, ProgramModel& model) {
  const std::int64_t ran = steps_run(logs);
  const bool bounded = bounded_by_probe(logs) || run.stopped;
  if (run.timed_out) {
    model.steps_evidence = fmt::format("the trial reached its time limit after {} steps", ran);
    return;
  }
  if (!has_flag) {
    model.steps_evidence =
        bounded ? fmt::format("no step flag: the probe ended the trial after {} steps", ran)
                : fmt::format("no step flag: the program ended by itself after {} steps", ran);
    if (!bounded && run.exited && run.exit.success() && ran < bound) model.ended_after = ran;
    return;
  }
  if (bounded && ran >= bound) {
    model.step_flag_ignored = true;
    model.steps_evidence = fmt::format(
        "{} {} ran on to the probe's bound of {} steps: it does not bound the optimizer steps "
        "(it counts epochs or something else), so the gates leave it as written and the probe "
        "ends every gate at its count",
        flag, asked, bound);
    return;
  }
  if (!bounded && run.exited && ran == asked + 1) {
    model.max_steps_offset = 1;
    model.steps_evidence =
        fmt::format("{} {} ran {} steps (iterations 0..{}): the gates hand it max_steps - 1", flag,
                    asked, ran, asked);
    return;
  }
  if (!bounded && run.exited && ran == asked) {
    model.max_steps_offset = 0;
    model.steps_evidence = fmt::format("{} {} ran {} steps", flag, asked, ran);
    return;
  }
  if (!bounded && run.exited && run.exit.success() && ran < asked) {
    model.ended_after = ran;
    model.steps_evidence = fmt::format(
        "{} {} ended by itself after {} steps: its data or epochs end first, and the first gate "
        "sets the count the others are held to",
        flag, asked, ran);
    return;
  }
  model.steps_evidence = fmt::format("{} {}: {} steps seen", flag, asked, ran);
}

void measure_distribution(const TrialLogs& logs, ProgramModel& model) {
  model.distributed = !logs.probe.pg_ready.empty();
  if (model.distributed) {
    const logs::PgReadyRecord& pg = logs.probe.pg_ready.front();
    model.distributed_evidence = fmt::format("init_process_group ran (backend {}, world size {})",
                                             pg.backend, pg.world_size);
  } else if (logs.probe.records > 0) {
    model.distributed_evidence =
        "the probe saw it train and never call torch.distributed.init_process_group: it is not "
        "distributed yet, so the dp gate will stop and say what to add";
  }
  if (const logs::RunRecord* r = logs.probe.run(); r && r->spawn_in_place) {
    model.distributed_evidence += fmt::format(
        "{}it calls torch.multiprocessing.spawn(nprocs={}): each rank the tool starts runs that "
        "worker itself, in the gate's world (the program's own count and rendezvous are not used)",
        model.distributed_evidence.empty() ? "" : "; ", *r->spawn_in_place);
  }
}

void measure_two_processes(const TrialLogs& one, const std::vector<TrialLogs>& two,
                           const TrialRun& run, bool has_batch_flag, bool has_accum_flag,
                           ProgramModel& model) {
  if (two.empty()) return;
  const logs::RankLog& rank0 = two.front().probe;
  if (rank0.steps.empty()) {
    model.second_trial_problem = fmt::format(
        "the two processes logged no optimizer step ({}): the batch and accumulation flags are "
        "taken per process",
        run.exited ? run.exit.describe() : std::string("stopped"));
    return;
  }
  model.second_trial = true;
  const auto batch1 = first_batch(one.probe);
  const auto batch2 = first_batch(rank0);
  if (has_batch_flag && batch1 && batch2) {
    if (*batch2 == *batch1) {
      model.batch_scope = "process";
      model.batch_evidence = fmt::format(
          "the first input's batch dimension is {} with one process and with two: "
          "the flag is each process's micro-batch",
          *batch1);
    } else if (*batch2 * 2 == *batch1) {
      model.batch_scope = "global";
      model.batch_evidence = fmt::format(
          "the first input's batch dimension is {} with one process and {} with two: the program "
          "divides the flag by the world size (a global batch)",
          *batch1, *batch2);
    } else {
      model.batch_evidence = fmt::format(
          "the first input's batch dimension is {} with one process and {} with two: neither "
          "the same nor half, taken per process",
          *batch1, *batch2);
    }
  }
  const auto count1 = first_loss_count(one.probe);
  const auto count2 = first_loss_count(rank0);
  if (has_accum_flag && count1 && count2) {
    if (*count2 == *count1) {
      model.accum_scope = "process";
      model.accum_evidence = fmt::format(
          "{} backward() calls a step with one process and with two: the flag is per process",
          *count1);
    } else if (*count2 * 2 == *count1) {
      model.accum_scope = "divided";
      model.accum_evidence = fmt::format(
          "{} backward() calls a step with one process, {} with two: the program "
          "divides the flag by the world size",
          *count1, *count2);
    }
  }
  std::vector<std::string> printed;
  for (std::size_t r = 0; r < two.size(); ++r) {
    if (!two[r].trainer.steps.empty()) {
      model.printing_ranks.push_back(static_cast<int>(r));
      printed.push_back(std::to_string(r));
    }
  }
  std::set<std::string> written;
  for (const logs::CheckpointRecord& c : one.probe.checkpoints) written.insert(c.path);
  std::set<std::string> resumed;
  for (const TrialLogs& rank : two) {
    for (const logs::ShapeRecord& s : rank.probe.shapes) {
      if (s.where == "send" || s.where == "recv") {
        model.stages = true;
        model.stages_evidence = fmt::format(
            "rank {} sent or received a {} tensor point to point at step {}: pipeline stages",
            s.at.rank, fmt::join(s.shape, "x"), s.global_step);
      }
    }
    for (const logs::LoadRecord& l : rank.probe.loads) {
      if (written.count(l.path) != 0) resumed.insert(l.path);
    }
  }
  model.resumed.assign(resumed.begin(), resumed.end());
  measure_stages(one, two, model);
}

void measure_step_batch(const TrialLogs& one, const std::string& name, std::int64_t flag,
                        ProgramModel& model) {
  const auto micro = first_batch(one.probe);
  const auto count = first_loss_count(one.probe);
  if (one.probe.layouts.empty() || !micro || !count || *count < 2 || *micro * *count != flag) {
    return;
  }
  model.batch_flag_is_step = true;
  model.batch_flag_evidence = fmt::format(
      "{} {} is the whole step's batch: the schedule splits it into {} micro-batches of {} (the "
      "first input's batch dimension), so it is left as written and the gates keep it",
      name, flag, *count, *micro);
}

}  // namespace bigmac::adopt
