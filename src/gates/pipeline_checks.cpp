#include "gates/pipeline_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <span>

#include "baseline/layer_coverage.h"
#include "gates/observability.h"

namespace bigmac::gates {
namespace {

std::string step_text(char phase, int mb) { return fmt::format("{}{}", phase, mb); }

}  // namespace

std::vector<std::pair<char, int>> schedule_sequence(const std::string& schedule, int stage,
                                                    int stages, int micro_batches) {
  std::vector<std::pair<char, int>> out;
  if (schedule == "gpipe") {
    for (int m = 0; m < micro_batches; ++m) out.emplace_back('F', m);
    for (int m = 0; m < micro_batches; ++m) out.emplace_back('B', m);
    return out;
  }
  const int warmup = std::min(std::max(stages - stage - 1, 0), micro_batches);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) out.emplace_back('F', next_f);
  while (next_f < micro_batches) {
    out.emplace_back('F', next_f++);
    out.emplace_back('B', next_b++);
  }
  while (next_b < micro_batches) out.emplace_back('B', next_b++);
  return out;
}

CheckResult check_layer_coverage(const CheckContext& ctx) {
  const char* name = "layer_coverage";
  const int layers = ctx.plan.config.model.num_layers;
  const int stages = ctx.plan.config.parallel.pp_size;
  using Kind = baseline::LayerCoverage::Kind;
  const baseline::LayerCoverage c =
      baseline::cover_layers(std::span<const RankEvidence>(ctx.evidence.ranks), layers, stages);
  const auto range = [](const logs::LayoutRecord& l) {
    return fmt::format("stage {}: {}..{}", l.stage, l.first_layer, l.last_layer);
  };
  std::vector<std::string> ranges;
  for (const auto& [stage, l] : c.stages) ranges.push_back(range(*l.record));
  switch (c.kind) {
    case Kind::kReplicasDisagree: {
      const logs::LayoutRecord &a = *c.a.record, &b = *c.b.record;
      return certain(fail(name,
                          fmt::format("replicas of stage {} disagree: layers {}..{} on rank {}, "
                                      "{}..{} on rank {}",
                                      b.stage, a.first_layer, a.last_layer, a.at.rank,
                                      b.first_layer, b.last_layer, b.at.rank),
                          {evidence_of(a, "layout"), evidence_of(b, "layout")}),
                     -1);
    }
    case Kind::kNoLayout:
      return not_logged(ctx.evidence, name, "no `layout` event: nothing to check", {"layout"});
    case Kind::kLayersUnknown:
      // The probe logged the stage but could not read its layers (docs/pipelines.md).
      return not_logged(
          ctx.evidence, name,
          fmt::format("stage {} (rank {}): its layers are not known: {}", c.a.record->stage,
                      c.a.record->at.rank, c.a.record->layers_unknown),
          {"layer_range"});
    case Kind::kStageCount:
      return fail(name, fmt::format("{} stages logged a layout, planned {} (missing [{}])",
                                    c.stages.size(), stages, fmt::join(c.missing, ",")));
    case Kind::kStageWithoutLayers: {
      // A stage without layers only passes activations on: the split point that made it is
      // outside (0, num_layers), or two split points coincide.
      const logs::LayoutRecord& l = *c.a.record;
      return certain(
          fail(name,
               fmt::format("stage {} owns no layer (layers {}..{}); every stage needs at "
                           "least one: check the split point before it (each split point "
                           "inside (0, {}))",
                           l.stage, l.first_layer, l.last_layer, layers),
               {evidence_of(l, range(l))}),
          -1);
    }
    case Kind::kLayerOutsideModel: {
      const logs::LayoutRecord& l = *c.a.record;
      return certain(
          fail(name,
               fmt::format("stage {} claims layer {} but the model has {} layers (0..{})", l.stage,
                           c.layer, layers, layers - 1),
               {evidence_of(l, range(l))}),
          -1);
    }
    case Kind::kLayerNotOnOneStage:
      return certain(fail(name, fmt::format("layer {} is held by {} stages [{}] ({})", c.layer,
                                            c.owners.size(), fmt::join(c.owners, ","),
                                            fmt::join(ranges, ", "))),
                     -1);
    case Kind::kCovered:
      break;
  }
  return pass(name, fmt::format("{} layers each in exactly one of {} stages ({})", layers, stages,
                                fmt::join(ranges, ", ")));
}

CheckResult check_schedule_order(const CheckContext& ctx) {
  const char* name = "schedule_order";
  const std::string schedule = ctx.plan.config.parallel.schedule;
  const int stages = ctx.plan.config.parallel.pp_size;
  const int m = ctx.plan.config.derived.micro_batches;
  // The schedule the stages ran under, where the probe read it from the schedule object.
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::LayoutRecord& l : r.layouts) {
      if (l.schedule.empty() || l.schedule == schedule) continue;
      if (l.schedule != "gpipe" && l.schedule != "1f1b") {
        return not_logged(ctx.evidence, name,
                          fmt::format("stage {} ran under {}, whose order the tool does not "
                                      "model (gpipe and 1f1b): its passes are not judged",
                                      l.stage, l.schedule),
                          {"schedule_model"});
      }
      return certain(fail(name,
                          fmt::format("stage {} ran under {}, the gate planned {} "
                                      "(parallel.schedule): set it to the program's schedule, "
                                      "or hand the program {{schedule}}",
                                      l.stage, l.schedule, schedule),
                          {evidence_of(l, "layout schedule=" + l.schedule)}),
                     -1);
    }
  }
  std::int64_t checked = 0;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    std::map<std::pair<std::int64_t, int>, std::vector<const logs::MicroBatchRecord*>> runs;
    for (const logs::MicroBatchRecord& mb : r.micro_batches)
      runs[{mb.global_step, mb.stage}].push_back(&mb);
    for (const auto& [key, seen] : runs) {
      const auto [step, stage] = key;
      const auto want = schedule_sequence(schedule, stage, stages, m);
      std::set<std::pair<char, int>> once;
      for (const auto* mb : seen) {
        if (!once.insert({mb->phase, mb->mb}).second) {
          return fail(name,
                      fmt::format("rank {} stage {} step {}: {} ran twice", r.rank, stage, step,
                                  step_text(mb->phase, mb->mb)),
                      {evidence_of(*mb, step_text(mb->phase, mb->mb))});
        }
      }
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (i >= seen.size()) {
          return fail(name,
                      fmt::format("rank {} stage {} step {}: {} of {} passes logged, {} missing "
                                  "({} order)",
                                  r.rank, stage, step, seen.size(), want.size(),
                                  step_text(want[i].first, want[i].second), schedule),
                      {evidence_of(*seen.back(),
                                   "last pass " + step_text(seen.back()->phase, seen.back()->mb))});
        }
        if (seen[i]->phase != want[i].first || seen[i]->mb != want[i].second) {
          return fail(name,
                      fmt::format("rank {} stage {} step {}: pass {} is {}, {} expects {}", r.rank,
                                  stage, step, i, step_text(seen[i]->phase, seen[i]->mb), schedule,
                                  step_text(want[i].first, want[i].second)),
                      {evidence_of(*seen[i], step_text(seen[i]->phase, seen[i]->mb))});
        }
      }
      if (seen.size() > want.size()) {
        return fail(name,
                    fmt::format("rank {} stage {} step {}: {} passes, {} with {} micro-batches "
                                "expects {}",
                                r.rank, stage, step, seen.size(), schedule, m, want.size()),
                    {evidence_of(*seen[want.size()], "extra pass")});
      }
      ++checked;
    }
  }
  if (checked == 0)
    return not_logged(ctx.evidence, name, "no `mb` event: nothing to check", {"mb"});
  return pass(name, fmt::format("{} (stage, step) schedules in {} order, {} micro-batches each",
                                checked, schedule, m));
}

CheckResult check_no_starved_stage(const CheckContext& ctx) {
  const char* name = "no_starved_stage";
  const int stages = ctx.plan.config.parallel.pp_size;
  const int m = ctx.plan.config.derived.micro_batches;
  std::map<int, std::map<std::int64_t, std::pair<int, int>>> counts;  // stage -> step -> (F, B)
  std::set<std::int64_t> steps;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::MicroBatchRecord& mb : r.micro_batches) {
      auto& c = counts[mb.stage][mb.global_step];
      (mb.phase == 'F' ? c.first : c.second) += 1;
      steps.insert(mb.global_step);
    }
  }
  if (counts.empty())
    return not_logged(ctx.evidence, name, "no `mb` event: nothing to check", {"mb"});
  for (int s = 0; s < stages; ++s) {
    if (!counts.count(s)) {
      return fail(name, fmt::format("stage {} never ran a micro-batch ({} steps ran elsewhere)", s,
                                    steps.size()));
    }
    // Data parallel replicas of a stage add up; each must run every micro-batch.
    const int replicas = std::max(1, ctx.plan.config.derived.dp);
    for (std::int64_t step : steps) {
      const auto it = counts[s].find(step);
      const auto [f, b] = it == counts[s].end() ? std::pair{0, 0} : it->second;
      if (f < m * replicas || b < m * replicas) {
        return fail(name, fmt::format("stage {} at step {} ran {} forward and {} backward passes, "
                                      "expected {} each ({} micro-batches × {} replicas)",
                                      s, step, f, b, m * replicas, m, replicas));
      }
    }
  }
  return pass(name, fmt::format("every one of {} stages ran {} micro-batches forward and backward "
                                "in all {} steps",
                                stages, m, steps.size()));
}

}  // namespace bigmac::gates
