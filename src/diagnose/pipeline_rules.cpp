#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "baseline/checkpoint_writers.h"
#include "baseline/layer_coverage.h"
#include "baseline/progress.h"
#include "baseline/stage_layout.h"
#include "diagnose/rule_finding.h"

namespace bigmac::diagnose::detail {
namespace {

// One layout per stage, with its source: the one the gate's checks judge
// (baseline::stage_layouts).
std::map<int, Sourced<logs::LayoutRecord>> layouts_by_stage(const MetricInput& in) {
  std::map<int, Sourced<logs::LayoutRecord>> out;
  for (const auto& [stage, l] : baseline::stage_layouts(in.logs)) {
    out.emplace(stage, Sourced<logs::LayoutRecord>{l.record, &l.log->label()});
  }
  return out;
}

Evidence layout_evidence(const Sourced<logs::LayoutRecord>& l) {
  const logs::LayoutRecord& r = *l.record;
  return evidence_of(
      l, fmt::format("ev=layout stage={}/{} layers={}..{} param_count={} tied_duplicate_count={}",
                     r.stage, r.num_stages, r.first_layer, r.last_layer, r.param_count,
                     r.tied_duplicate_count));
}

using baseline::owns_no_layer;

// A stage whose layout says it holds no layer, where layer_coverage finds it
// (baseline::cover_layers): decided by the layout records alone, whether or not the stages got
// as far as a micro-batch before the gate was stopped.
void stage_without_layers(const MetricInput& in, std::vector<Finding>& out) {
  const std::optional<int> last =
      baseline::last_stage(in.configured.pp, baseline::stage_layouts(in.logs));
  if (!last) return;
  const std::optional<int> layers =
      in.configured.num_layers > 0 ? std::optional<int>(in.configured.num_layers) : std::nullopt;
  const baseline::LayerCoverage coverage = baseline::cover_layers(in.logs, layers, *last + 1);
  if (coverage.kind != baseline::LayerCoverage::Kind::kStageWithoutLayers) return;
  const logs::LayoutRecord& r = *coverage.a.record;
  out.push_back({"stage_without_layers",
                 {{"stage", std::to_string(r.stage)},
                  {"num_stages", std::to_string(r.num_stages)},
                  {"first_layer", std::to_string(r.first_layer)},
                  {"last_layer", std::to_string(r.last_layer)},
                  {"split_points", std::to_string(std::max(r.num_stages - 1, 0))}},
                 {layout_evidence({&r, &coverage.a.log->label()})},
                 r.at.rank});
}

void stage_without_forward(const MetricInput& in, std::vector<Finding>& out) {
  const auto mbs = all_of<logs::MicroBatchRecord>(in.logs);
  if (mbs.empty()) return;  // no pipeline trace: nothing to judge
  std::set<int> forwarded;
  for (const auto& m : mbs) {
    if (m.record->phase == 'F') forwarded.insert(m.record->stage);
  }
  for (const auto& [stage, layout] : layouts_by_stage(in)) {
    const logs::LayoutRecord& r = *layout.record;
    if (forwarded.count(stage) != 0 || owns_no_layer(r)) continue;  // the latter: its own rule
    out.push_back({"stage_without_forward",
                   {{"stage", std::to_string(stage)},
                    {"first_layer", std::to_string(r.first_layer)},
                    {"last_layer", std::to_string(r.last_layer)},
                    {"split_point", std::to_string(r.first_layer)}},
                   {layout_evidence(layout)},
                   r.at.rank});
  }
}

void stage_param_sum(const MetricInput& in, std::vector<Finding>& out) {
  const auto stages = baseline::stage_layouts(in.logs);
  if (stages.size() < 2) return;
  const int num_stages = stages.begin()->second.record->num_stages;
  if (static_cast<int>(stages.size()) != num_stages) return;  // a stage's log is missing
  // The model's own count, as param_count judges the stages against it; the baseline's where
  // no rank logged a `model` event.
  std::int64_t total = 0;
  for (const auto& m : all_of<logs::ModelRecord>(in.logs)) {
    total = m.record->param_count;
    break;
  }
  if (total <= 0 && in.baseline != nullptr) {
    total = in.baseline->structure.param_count.value_or(0);
  }
  if (total <= 0) return;
  const baseline::StageParamSum counted = baseline::stage_param_sum(stages);
  const std::int64_t sum = counted.sum;
  std::set<std::string> tied;
  std::vector<Evidence> evidence;
  for (const auto& [stage, layout] : layouts_by_stage(in)) {
    tied.insert(layout.record->tied.begin(), layout.record->tied.end());
    evidence.push_back(layout_evidence(layout));
  }
  const std::int64_t owned = counted.owned();
  if (owned == total) return;
  std::string detail;
  if (owned > total) {
    detail = fmt::format(
        "{} parameters are counted on two stages: shared weights (a tied embedding and head) "
        "sit on two stages without being reported as tied{}",
        owned - total,
        tied.empty() ? "" : fmt::format(" (reported tied: {})", fmt::join(tied, ", ")));
  } else {
    detail = fmt::format(
        "{} parameters belong to no stage: a module (embedding, final norm or head) was "
        "dropped at a split point or built on no stage",
        total - owned);
  }
  out.push_back({"stage_param_sum_mismatch",
                 {{"stage_sum", std::to_string(sum)},
                  {"total", std::to_string(total)},
                  {"difference", fmt::format("{:+}", sum - total)},
                  {"tied", tied.empty() ? "none" : fmt::format("{}", fmt::join(tied, ", "))},
                  {"detail", detail}},
                 std::move(evidence),
                 -1});
}

// Per stage: how far it got by a moment and when it last did something before it.
struct StageProgress {
  int rank = -1;
  int forwards = 0;
  int backwards = 0;
  double last = 0;
  Evidence last_evidence;
};

// Each stage's progress counting the micro-batches that ended by `until`.
std::map<int, StageProgress> progress_until(const std::vector<Sourced<logs::MicroBatchRecord>>& mbs,
                                            double until) {
  std::map<int, StageProgress> stages;
  for (const auto& m : mbs) {
    const logs::MicroBatchRecord& r = *m.record;
    const double end = std::max(r.end, r.at.t);
    StageProgress& p = stages[r.stage];
    p.rank = r.at.rank;
    if (end > until) continue;
    (r.phase == 'F' ? p.forwards : p.backwards) += 1;
    if (end >= p.last) {
      p.last = end;
      p.last_evidence =
          evidence_of(m, fmt::format("ev=mb global_step={} stage={} mb={} phase={} end={}",
                                     r.global_step, r.stage, r.mb, r.phase, number(r.end)));
    }
  }
  return stages;
}

// Stage `stage`, idle for `idle` seconds from the moment `stages` was taken: which neighbour it
// waits for. A stage needs activations from the one before (forward) and gradients from the
// one after (backward); the neighbour that sent nothing new is the one it waits for.
Finding idle_stage(const std::map<int, StageProgress>& stages, int stage, double idle,
                   std::vector<Evidence> evidence) {
  const StageProgress& p = stages.at(stage);
  const int last_stage = stages.rbegin()->first;
  const StageProgress* up = stage > 0 && stages.count(stage - 1) ? &stages.at(stage - 1) : nullptr;
  const StageProgress* down =
      stage < last_stage && stages.count(stage + 1) ? &stages.at(stage + 1) : nullptr;
  const bool no_activation = up != nullptr && up->forwards <= p.forwards;
  const bool no_gradient = down != nullptr && down->backwards <= p.backwards;
  int waits = -1;
  if (no_activation && !no_gradient)
    waits = stage - 1;
  else if (no_gradient && !no_activation)
    waits = stage + 1;
  else if (up != nullptr && down != nullptr)
    waits = up->last <= down->last ? stage - 1 : stage + 1;
  else if (up != nullptr)
    waits = stage - 1;
  else if (down != nullptr)
    waits = stage + 1;
  const StageProgress* other = waits >= 0 ? &stages.at(waits) : nullptr;
  const std::string waits_for = other != nullptr
                                    ? fmt::format("stage {} (rank {})", waits, other->rank)
                                    : std::string("its neighbour stage");
  std::string detail =
      fmt::format("stage {} has done {} forward and {} backward passes and waits for {}", stage,
                  p.forwards, p.backwards,
                  waits == stage - 1 ? fmt::format("activations from {}", waits_for)
                                     : fmt::format("gradients from {}", waits_for));
  if (other != nullptr) {
    detail += fmt::format(", which has done {} forward and {} backward passes", other->forwards,
                          other->backwards);
  }
  return {"stage_idle",
          {{"rank", std::to_string(p.rank)},
           {"stage", std::to_string(stage)},
           {"idle_s", number(idle)},
           {"waits_for", waits_for},
           {"detail", detail}},
          std::move(evidence),
          p.rank};
}

// A stage that paused between two signs of work longer than the gate's idle limit (the pause
// `no_idle_stage` fails on, judged by the same baseline::longest_idle), or that stopped while
// the others went on for longer than the stall timeout.
void stage_idle(const MetricInput& in, std::vector<Finding>& out) {
  const auto mbs = all_of<logs::MicroBatchRecord>(in.logs);
  const std::map<int, StageProgress> all = progress_until(mbs, std::numeric_limits<double>::max());
  if (all.size() < 2) return;
  std::set<int> reported;
  for (const logs::RankLog& log : in.logs) {
    if (log.micro_batches.empty()) continue;
    const int stage = log.micro_batches.front().stage;
    const auto gap = baseline::longest_idle(baseline::signs_of_work(log));
    if (!gap || gap->seconds() <= in.limits.idle_limit_s || !reported.insert(stage).second) {
      continue;
    }
    const auto at = [&](const baseline::WorkSign& s, std::string text) {
      return Evidence{log.rank, log.label(), s.line, s.t, std::move(text)};
    };
    out.push_back(idle_stage(
        progress_until(mbs, gap->before.t), stage, gap->seconds(),
        {at(gap->before, "last work before the pause"),
         at(gap->after, fmt::format("first work after it, {} s later", number(gap->seconds())))}));
  }
  double latest = 0;
  for (const auto& [stage, p] : all) latest = std::max(latest, p.last);
  for (const auto& [stage, p] : all) {
    const double idle = latest - p.last;
    if (idle <= in.limits.stall_limit_s || reported.count(stage) > 0) continue;
    out.push_back(idle_stage(all, stage, idle, {p.last_evidence}));
  }
}

// More than one rank wrote checkpoints, as single_checkpoint_writer finds them
// (baseline::checkpoint_writers).
void checkpoint_writers(const MetricInput& in, std::vector<Finding>& out) {
  const auto writers = baseline::checkpoint_writers(in.logs);
  if (writers.size() < 2) return;
  std::vector<std::string> ranks;
  Finding f{"multiple_checkpoint_writers", {}, {}, -1};
  for (const auto& w : writers) {
    ranks.push_back(std::to_string(w.log->rank));
    const Sourced<logs::CheckpointRecord> c{w.record, &w.log->label()};
    f.evidence.push_back(
        evidence_of(c, fmt::format("ev=ckpt step={} path={}", w.record->step, w.record->path)));
  }
  f.values = {{"ranks", fmt::format("{}", fmt::join(ranks, ", "))},
              {"count", std::to_string(writers.size())}};
  out.push_back(std::move(f));
}

}  // namespace

// A loss computed on a stage other than the last: the labels reached a stage that has no head.
// The last stage is the one no_middle_stage_loss judges by (baseline::last_stage).
void middle_stage_loss(const MetricInput& in, std::vector<Finding>& out) {
  const std::optional<int> last =
      baseline::last_stage(in.configured.pp, baseline::stage_layouts(in.logs));
  if (!last) return;
  const auto loss = baseline::first_loss_off_last_stage(in.logs, *last);
  if (loss.record == nullptr) return;
  const logs::LossRecord& r = *loss.record;
  const Sourced<logs::LossRecord> l{loss.record, &loss.log->label()};
  out.push_back({"middle_stage_loss",
                 {{"stage", std::to_string(r.stage)},
                  {"last_stage", std::to_string(*last)},
                  {"step", std::to_string(r.global_step)}},
                 {evidence_of(l, fmt::format("ev=loss global_step={} stage={} mb={} value={}",
                                             r.global_step, r.stage, r.mb, number(r.value)))},
                 r.at.rank});
}

void pipeline_rules(const MetricInput& in, std::vector<Finding>& out) {
  stage_without_layers(in, out);
  stage_without_forward(in, out);
  middle_stage_loss(in, out);
  stage_param_sum(in, out);
  stage_idle(in, out);
  checkpoint_writers(in, out);
}

}  // namespace bigmac::diagnose::detail
