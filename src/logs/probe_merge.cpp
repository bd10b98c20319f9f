#include "logs/probe_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace bigmac::logs {
namespace {

/// Fills `into` from `from` when `into` has no value; counts where the value came from.
template <class T>
void fill(std::optional<T>& into, const std::optional<T>& from, FieldSource& source) {
  if (into) {
    ++source.trainer;
  } else if (from) {
    into = from;
    ++source.probe;
  }
}

/// The same for fields whose "no value" is a default (0, "", -1, an empty shape).
template <class T>
void fill_value(T& into, const T& from, const T& none, FieldSource& source) {
  if (into != none) {
    ++source.trainer;
  } else if (from != none) {
    into = from;
    ++source.probe;
  }
}

/// Whole events of one kind: the trainer's when it wrote any, else the probe's.
template <class R>
void take_events(std::vector<R>& into, const std::vector<R>& from, FieldSource& source) {
  if (!into.empty()) {
    source.trainer += static_cast<std::int64_t>(into.size());
  } else {
    into = from;
    source.probe += static_cast<std::int64_t>(from.size());
  }
}

void merge_steps(RankLog& out, const RankLog& probe, bool whole_run, FieldSources& sources) {
  std::map<std::int64_t, const StepRecord*> probe_steps;
  for (const StepRecord& s : probe.steps) probe_steps.emplace(s.global_step, &s);
  std::map<std::int64_t, bool> trainer_has;
  for (StepRecord& s : out.steps) {
    trainer_has[s.global_step] = true;
    const auto it = probe_steps.find(s.global_step);
    static const StepRecord kNone;
    const StepRecord& p = it != probe_steps.end() ? *it->second : kNone;
    static const StepRecord kEmpty;
    const StepRecord& whole = whole_run ? p : kEmpty;
    fill(s.loss, whole.loss, sources["loss"]);
    fill(s.grad_norm, whole.grad_norm, sources["grad_norm"]);
    fill(s.lr, p.lr, sources["lr"]);
    fill(s.samples_per_step, p.samples_per_step, sources["samples_per_step"]);
    fill(s.step_ms, p.step_ms, sources["step_ms"]);
  }
  // Gaps only: a step past the trainer's last line is one whose line may not be read yet.
  const std::int64_t last = trainer_has.empty() ? -1 : trainer_has.rbegin()->first;
  bool added = false;
  for (const StepRecord& p : probe.steps) {
    if (trainer_has.count(p.global_step) != 0) continue;
    if (last >= 0 && p.global_step > last) continue;
    if (last >= 0 && !whole_run) continue;
    trainer_has[p.global_step] = true;
    out.steps.push_back(p);
    added = true;
    if (p.loss) ++sources["loss"].probe;
    if (p.grad_norm) ++sources["grad_norm"].probe;
    if (p.lr) ++sources["lr"].probe;
    if (p.samples_per_step) ++sources["samples_per_step"].probe;
    if (p.step_ms) ++sources["step_ms"].probe;
  }
  if (added) {
    std::stable_sort(
        out.steps.begin(), out.steps.end(),
        [](const StepRecord& a, const StepRecord& b) { return a.global_step < b.global_step; });
  }
}

std::optional<std::int64_t> loss_count(const StepRecord& step) {
  for (const auto& [name, value] : step.extra) {
    if (name == "loss_count") return static_cast<std::int64_t>(value);
  }
  return std::nullopt;
}

/// Fills the probe's batch arithmetic from what it measured; false when a part is missing.
bool derive_batch(RankLog& probe, int model_parallel) {
  if (probe.batches.empty() || probe.batches.back().input_shape.empty()) return false;
  int world = probe.run() ? probe.run()->world_size : 0;
  if (!probe.pg_ready.empty() && probe.pg_ready.back().world_size > 0) {
    world = probe.pg_ready.back().world_size;
  }
  if (world <= 0) world = 1;
  if (model_parallel < 1 || world % model_parallel != 0) return false;
  const std::int64_t dp = world / model_parallel;
  BatchRecord& batch = probe.batches.back();
  const std::int64_t micro = batch.input_shape.front();
  // backward() calls that change from step to step (a GAN's second optimizer, a loss computed
  // for a side task now and then) count no accumulation: nothing is derived from them, nor
  // from one step alone (a GAN's first step has one backward() fewer than the next).
  std::optional<std::int64_t> same;
  int counted = 0;
  for (const StepRecord& step : probe.steps) {
    const auto count = loss_count(step);
    if (!count || *count <= 0) continue;
    if (same && *same != *count) return false;
    same = count;
    ++counted;
  }
  if (counted < 2) return false;
  bool derived = false;
  for (StepRecord& step : probe.steps) {
    const auto count = loss_count(step);
    if (!count || *count <= 0) continue;
    step.samples_per_step = micro * *count * dp;
    if (!derived) {
      batch.micro_batch_size = micro;
      batch.grad_accum = *count;
      batch.dp = dp;
      batch.samples_per_step = *step.samples_per_step;
      derived = true;
    }
  }
  return derived;
}

}  // namespace

std::string FieldSource::describe() const {
  if (probe == 0) return "trainer";
  if (trainer == 0) return "probe";
  return fmt::format("trainer ({}), probe ({})", trainer, probe);
}

RankLog merge_probe_log(RankLog out, RankLog probe, const ProbeMerge& how) {
  FieldSources sources;
  out.probe_ran = out.probe_ran || !probe.runs.empty();
  // Every rank's own digests, before its steps are merged under the trainer's or dropped for
  // another rank's.
  for (const StepRecord& s : probe.steps) {
    if (s.input_digest || s.param_digest || s.sample_count || s.buffer_digest) {
      out.step_digests.push_back({s.global_step, s.input_digest, s.param_digest, s.at,
                                  s.sample_count, s.sample_digest, s.sample_hashes,
                                  s.buffer_digest});
    }
  }
  const bool derived = derive_batch(probe, how.model_parallel);
  const bool trainer_steps = how.steps_logged_elsewhere || !out.steps.empty();
  if (out.steps.empty() && how.steps_logged_elsewhere) probe.steps.clear();
  // The probe's point-to-point shapes carry no stage; those it read from a pipelining stage
  // (enter, exit, labels) carry theirs and describe the same tensors: where there are staged
  // ones, they stand for the transfers.
  const bool staged = std::any_of(probe.shapes.begin(), probe.shapes.end(),
                                  [](const ShapeRecord& s) { return s.name != "p2p"; });
  if (staged || trainer_steps) {
    std::erase_if(probe.shapes, [](const ShapeRecord& s) { return s.name == "p2p"; });
  }
  merge_steps(out, probe, how.model_parallel == 1 && how.data_parallel == 1, sources);

  if (!out.runs.empty() && probe.run()) {
    RunRecord& r = out.runs.back();
    const RunRecord& p = *probe.run();
    FieldSource& s = sources["run"];
    ++s.trainer;
    FieldSource ignored;
    fill_value(r.world_size, p.world_size, 0, ignored);
    fill_value(r.local_rank, p.local_rank, -1, ignored);
    fill_value(r.device, p.device, std::string(), ignored);
    fill_value(r.backend, p.backend, std::string(), ignored);
    fill_value(r.torch_version, p.torch_version, std::string(), ignored);
    fill_value(r.pid, p.pid, std::int64_t{0}, ignored);
    if (ignored.probe > 0) ++s.probe;
  } else {
    take_events(out.runs, probe.runs, sources["run"]);
  }
  take_events(out.pg_ready, probe.pg_ready, sources["pg_ready"]);
  take_events(out.dones, probe.dones, sources["done"]);
  take_events(out.checkpoints, probe.checkpoints, sources["checkpoints"]);
  take_events(out.loads, probe.loads, sources["loads"]);
  take_events(out.shapes, probe.shapes, sources["shapes"]);
  // A pipeline stage the probe read (docs/pipelines.md): its layout, its micro-batch passes and
  // the losses it computed, unless the trainer logs them itself.
  take_events(out.layouts, probe.layouts, sources["layouts"]);
  take_events(out.micro_batches, probe.micro_batches, sources["micro_batches"]);
  take_events(out.losses, probe.losses, sources["stage_losses"]);
  take_events(out.heartbeats, probe.heartbeats, sources["heartbeats"]);
  // The collective ledger (docs/probe.md): what a desync's diagnosis compares across ranks.
  take_events(out.collectives, probe.collectives, sources["collectives"]);

  if (const BatchRecord* p = probe.batch()) {
    if (out.batches.empty()) {
      // Without its arithmetic a probe `batch` would claim 0 samples/step: kept only derived.
      if (derived) {
        out.batches.push_back(*p);
        ++sources["input_shape"].probe;
      }
    } else {
      BatchRecord& b = out.batches.back();
      fill_value(b.input_shape, p->input_shape, std::vector<std::int64_t>(),
                 sources["input_shape"]);
      FieldSource ignored;
      fill_value(b.input_dtype, p->input_dtype, std::string(), ignored);
    }
  }
  if (const ModelRecord* p = probe.model()) {
    if (out.models.empty()) out.models.push_back(ModelRecord{p->at, 0, {}, {}, {}});
    ModelRecord& m = out.models.back();
    fill_value(m.param_count, p->param_count, std::int64_t{0}, sources["param_count"]);
    fill_value(m.param_digest, p->param_digest, std::string(), sources["param_digest"]);
    if (!m.seed && p->seed) {
      m.seed = p->seed;
      ++sources["seed"].probe;
    }
    if (m.seed_note.empty()) m.seed_note = p->seed_note;
  }
  // The probe's own complaints (probe_error) are context for diagnosis like any other line.
  for (const TextLine& line : probe.context.lines()) out.context.add(line);
  out.records += probe.records;
  out.unparseable += probe.unparseable;
  for (const std::string& source : probe.sources) out.sources.push_back(source);
  for (const auto& [field, source] : sources) {
    if (source.trainer + source.probe > 0) out.field_sources[field] = source.describe();
  }
  if (derived && sources["samples_per_step"].probe > 0) {
    out.field_sources["samples_per_step"] +=
        " (derived: input_shape[0] × loss_count × world_size / (pp × tp))";
  }
  return out;
}

}  // namespace bigmac::logs

namespace bigmac::logs {

std::int64_t average_replica_losses(RankLog& merged, const std::vector<const RankLog*>& replicas,
                                    std::size_t expected) {
  expected = std::max(expected, replicas.size());
  if (expected < 2) return 0;
  std::map<std::int64_t, std::pair<double, std::size_t>> sums;  // step -> (sum, ranks)
  for (const RankLog* replica : replicas) {
    for (const StepRecord& s : replica->steps) {
      if (!s.loss) continue;
      auto& [sum, count] = sums[s.global_step];
      sum += *s.loss;
      ++count;
    }
  }
  std::int64_t changed = 0;
  for (StepRecord& s : merged.steps) {
    const auto it = sums.find(s.global_step);
    if (it == sums.end() || it->second.second != expected) {
      // One replica's own loss is not the run's: until every replica logged the step (live,
      // the others are still on their way), the step has no loss to compare.
      s.loss.reset();
      continue;
    }
    s.loss = it->second.first / static_cast<double>(expected);
    ++changed;
  }
  if (changed > 0) {
    merged.field_sources["loss"] = fmt::format("probe (mean over {} replicas)", expected);
  }
  return changed;
}

namespace {

std::optional<double> extra_value(const StepRecord& step, std::string_view name) {
  for (const auto& [key, value] : step.extra) {
    if (key == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::int64_t combine_stage_values(RankLog& owner, const std::vector<const RankLog*>& ranks,
                                  const StageCombination& how) {
  struct Sums {
    double loss = 0;
    std::size_t losses = 0;
    double squares = 0;
    std::size_t norms = 0;
  };
  std::map<std::int64_t, Sums> by_step;
  for (const RankLog* rank : ranks) {
    for (const StepRecord& s : rank->steps) {
      Sums& sums = by_step[s.global_step];
      if (s.loss) {
        sums.loss += *s.loss;
        ++sums.losses;
      }
      if (const auto sq = extra_value(s, "grad_norm_sq")) {
        sums.squares += *sq;
        ++sums.norms;
      }
    }
  }
  const std::size_t replicas = std::max<std::size_t>(how.replicas, 1);
  std::int64_t combined = 0;
  bool any_norm = false;
  for (StepRecord& s : owner.steps) {
    const auto it = by_step.find(s.global_step);
    const Sums none;
    const Sums& sums = it != by_step.end() ? it->second : none;
    s.loss.reset();
    s.grad_norm.reset();
    if (sums.losses == replicas) {
      s.loss = sums.loss / static_cast<double>(replicas);
      ++combined;
    }
    if (how.grad_norm && how.ranks > 0 && sums.norms == how.ranks) {
      s.grad_norm = std::sqrt(sums.squares / static_cast<double>(replicas));
      any_norm = true;
    }
  }
  owner.field_sources["loss"] =
      fmt::format("probe (the last stage's loss, mean over {} replicas)", replicas);
  owner.field_sources["grad_norm"] =
      how.grad_norm
          ? std::string(any_norm ? "probe (√ of the ranks' grad_norm_sq summed over the stages)"
                                 : "probe")
          : "not combined: " + how.grad_norm_unknown;
  return combined;
}

}  // namespace bigmac::logs

namespace bigmac::logs {
namespace {

/// The stage a probe log's rank runs (its first layout), or -1.
int stage_of(const RankLog& log) { return log.layouts.empty() ? -1 : log.layouts.front().stage; }

/// The backward() calls of each step when every step with one has the same number and at least
/// two steps have it (derive_batch's rule), else nothing.
std::optional<std::int64_t> constant_loss_count(const RankLog& log) {
  std::optional<std::int64_t> same;
  int counted = 0;
  for (const StepRecord& step : log.steps) {
    const auto count = loss_count(step);
    if (!count || *count <= 0) continue;
    if (same && *same != *count) return std::nullopt;
    same = count;
    ++counted;
  }
  return counted >= 2 ? same : std::nullopt;
}

std::string hex16(std::uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace

void combine_stage_structure(RankLog& rank, const std::vector<const RankLog*>& ranks,
                             const StageCombination& how) {
  const std::size_t replicas = std::max<std::size_t>(how.replicas, 1);
  std::int64_t held = 0;
  std::size_t counted = 0;
  std::map<int, const RankLog*> one_replica;  // stage -> the lowest rank that runs it
  for (const RankLog* log : ranks) {
    const ModelRecord* m = log->model();
    if (m && m->param_count > 0) {
      held += m->param_count;
      ++counted;
    }
    const int stage = stage_of(*log);
    auto [it, fresh] = one_replica.emplace(stage, log);
    if (!fresh && log->rank < it->second->rank) it->second = log;
  }
  const bool whole = counted == how.ranks && counted > 0;
  if (!whole) {
    rank.models.clear();
  } else {
    ModelRecord model = rank.models.empty() ? ModelRecord{} : rank.models.front();
    model.param_count = held / static_cast<std::int64_t>(replicas);
    // FNV-1a over each stage's digest in stage order: equal on every rank, and it changes
    // when any stage's initial parameters do.
    std::uint64_t digest = 1469598103934665603ULL;
    bool digests = true;
    for (const auto& [stage, log] : one_replica) {
      const ModelRecord* m = log->model();
      if (!m || m->param_digest.empty()) digests = false;
      const std::string part = fmt::format("{}:{};", stage, m ? m->param_digest : "");
      for (unsigned char c : part) digest = (digest ^ c) * 1099511628211ULL;
    }
    model.param_digest = digests ? hex16(digest) : std::string();
    rank.models.assign(1, model);
    rank.field_sources["param_count"] =
        fmt::format("probe (the {} ranks' parameters summed, over {} replica{})", counted, replicas,
                    replicas == 1 ? "" : "s");
  }
  // The run's batch: what enters the first stage, in as many micro-batches as the last stage
  // computes losses.
  const RankLog* first = nullptr;
  std::optional<std::int64_t> accum;
  for (const RankLog* log : ranks) {
    if (stage_of(*log) == 0 && log->batch() && !log->batch()->input_shape.empty() &&
        (!first || log->rank < first->rank)) {
      first = log;
    }
    if (!accum) accum = constant_loss_count(*log);
  }
  rank.batches.clear();
  if (!first || !accum || first->batch()->input_shape.front() <= 0) return;
  BatchRecord batch = *first->batch();
  batch.micro_batch_size = batch.input_shape.front();
  batch.grad_accum = *accum;
  batch.dp = static_cast<std::int64_t>(replicas);
  batch.samples_per_step = batch.micro_batch_size * *accum * batch.dp;
  rank.batches.push_back(batch);
  for (StepRecord& step : rank.steps) {
    if (!step.samples_per_step) step.samples_per_step = batch.samples_per_step;
  }
  rank.field_sources["samples_per_step"] =
      "probe (derived: the first stage's input_shape[0] × the last stage's loss_count × dp)";
}

void resolve_chain_stages(RankLog& probe, const std::map<int, RankLog>& all) {
  if (probe.layouts.empty()) return;
  const LayoutRecord& own = probe.layouts.front();
  // Only a rank of a chain (a neighbour logged) whose stage or stage count is missing.
  if ((own.prev_rank < 0 && own.next_rank < 0) || (own.stage >= 0 && own.num_stages > 0)) return;
  const auto link = [&](int rank, bool back) -> std::optional<int> {
    const auto it = all.find(rank);
    if (it == all.end() || it->second.layouts.empty()) return std::nullopt;  // not logged yet
    const LayoutRecord& l = it->second.layouts.front();
    return back ? l.prev_rank : l.next_rank;
  };
  const int self = own.at.rank;
  int stage = 0;
  int tail = 0;
  for (const bool back : {true, false}) {
    int at = self;
    for (std::size_t hops = 0;; ++hops) {
      const auto next = link(at, back);
      if (!next || hops > all.size()) return;  // unknown, or a loop
      if (*next < 0) break;
      at = *next;
      ++(back ? stage : tail);
    }
  }
  for (LayoutRecord& l : probe.layouts) {
    if (l.stage < 0) l.stage = stage;
    if (l.num_stages <= 0) l.num_stages = stage + tail + 1;
  }
  for (LossRecord& r : probe.losses) {
    if (r.stage < 0) r.stage = stage;
  }
  for (MicroBatchRecord& r : probe.micro_batches) {
    if (r.stage < 0) r.stage = stage;
  }
  for (ShapeRecord& r : probe.shapes) {
    if (r.stage < 0 || r.name == "p2p") r.stage = stage;  // a transfer's shape carries no stage
  }
}

}  // namespace bigmac::logs
