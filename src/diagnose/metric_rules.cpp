#include "diagnose/metric_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "core/checked_integer.h"
#include "diagnose/rule_finding.h"

namespace bigmac::diagnose {
namespace {

using detail::all_of;
using detail::evidence_of;
using detail::Finding;
using detail::number;
using detail::Sourced;

std::string optional_number(const std::optional<double>& v) { return v ? number(*v) : "-"; }

Evidence step_evidence(const Sourced<logs::StepRecord>& s) {
  const logs::StepRecord& r = *s.record;
  return evidence_of(
      s, fmt::format("ev=step global_step={} loss={} grad_norm={} lr={}", r.global_step,
                     optional_number(r.loss), optional_number(r.grad_norm), optional_number(r.lr)));
}

const logs::StepRecord& record_of(const Sourced<logs::StepRecord>& s) { return *s.record; }

// Steps of each rank that logs them, in log order.
// Each rank's steps from every file that holds them, in file order. A step with the same loss
// in two files of one rank is one line written twice (torchrun's console copy and the worker's
// own stdout.log, a log file and the stream it was echoed to), kept once; a step repeated
// within one file, or with another loss, is a step logged twice.
std::map<int, std::vector<Sourced<logs::StepRecord>>> steps_by_rank(
    std::span<const logs::RankLog> logs) {
  std::map<int, std::vector<Sourced<logs::StepRecord>>> out;
  // (rank, step, loss bits) -> the file that logged it first
  std::map<std::tuple<int, std::int64_t, std::optional<std::uint64_t>>, const std::string*> seen;
  for (const auto& s : all_of<logs::StepRecord>(logs)) {
    std::optional<std::uint64_t> loss;
    if (s.record->loss) {
      const double v = std::isnan(*s.record->loss) ? std::nan("") : *s.record->loss;
      loss = std::bit_cast<std::uint64_t>(v);
    }
    const auto [it, fresh] =
        seen.try_emplace({s.record->at.rank, s.record->global_step, loss}, s.file);
    if (!fresh && *it->second != *s.file) continue;
    out[s.record->at.rank].push_back(s);
  }
  return out;
}

// The rank whose step series is the run's (baseline::owns_series_before), or nullptr.
const std::vector<Sourced<logs::StepRecord>>* owner_steps(
    const std::map<int, std::vector<Sourced<logs::StepRecord>>>& by_rank, int loss_rank) {
  const std::vector<Sourced<logs::StepRecord>>* owner = nullptr;
  int owner_rank = 0;
  for (const auto& [rank, steps] : by_rank) {
    if (steps.empty()) continue;
    if (owner == nullptr || baseline::owns_series_before(rank, owner_rank, loss_rank)) {
      owner = &steps;
      owner_rank = rank;
    }
  }
  return owner;
}

void loss_non_finite(const MetricInput& in, std::vector<Finding>& out) {
  for (const auto& [rank, steps] : steps_by_rank(in.logs)) {
    const auto bad = baseline::first_non_finite_loss(steps, record_of);
    if (!bad) continue;
    const auto& s = steps[bad->index];
    // A trainer that logs no loss on a step (Megatron prints none once it is NaN) may still
    // log a non-finite gradient norm: the same finding, from the gradient norm.
    const std::string value =
        bad->from_grad_norm ? "unknown (grad_norm " + number(bad->value) + ")" : number(bad->value);
    out.push_back({"loss_non_finite",
                   {{"step", std::to_string(s.record->global_step)}, {"value", value}},
                   {step_evidence(s)},
                   rank});
    return;
  }
  for (const auto& s : all_of<logs::LossRecord>(in.logs)) {
    if (!std::isfinite(s.record->value)) {
      out.push_back(
          {"loss_non_finite",
           {{"step", std::to_string(s.record->global_step)}, {"value", number(s.record->value)}},
           {evidence_of(s, fmt::format("ev=loss global_step={} stage={} mb={} value={}",
                                       s.record->global_step, s.record->stage, s.record->mb,
                                       number(s.record->value)))},
           s.record->at.rank});
      return;
    }
  }
}

void grad_norm_checks(const MetricInput& in, std::vector<Finding>& out) {
  for (const auto& [rank, steps] : steps_by_rank(in.logs)) {
    for (const auto& s : steps) {
      if (s.record->grad_norm && *s.record->grad_norm == 0.0) {
        out.push_back({"grad_norm_zero",
                       {{"step", std::to_string(s.record->global_step)}},
                       {step_evidence(s)},
                       rank});
        break;
      }
    }
    const auto scan = baseline::scan_grad_norm_growth(steps, in.limits.growth, record_of);
    if (!scan.growth) continue;
    const auto& a = steps[scan.growth->before];
    const auto& b = steps[scan.growth->last];
    out.push_back({"grad_norm_growing",
                   {{"first_step", std::to_string(a.record->global_step)},
                    {"last_step", std::to_string(b.record->global_step)},
                    {"first", number(a.record->grad_norm.value_or(0))},
                    {"last", number(b.record->grad_norm.value_or(0))}},
                   {step_evidence(a), step_evidence(b)},
                   rank});
  }
}

void step_sequence(const MetricInput& in, std::vector<Finding>& out) {
  for (const auto& [rank, steps] : steps_by_rank(in.logs)) {
    const auto scan = baseline::scan_step_sequence(steps, record_of);
    if (scan.broken && scan.broken->kind == baseline::SequenceBreak::kUnexpected) {
      const baseline::SequenceBreak& b = *scan.broken;
      std::vector<Evidence> evidence;
      if (b.index > 0) evidence.push_back(step_evidence(steps[b.index - 1]));
      evidence.push_back(step_evidence(steps[b.index]));
      out.push_back({"step_gap",
                     {{"expected", std::to_string(b.expected)},
                      {"found", std::to_string(b.found)},
                      {"rank", std::to_string(rank)}},
                     std::move(evidence),
                     rank});
    }
    if (scan.repeated) {
      out.push_back(
          {"step_repeated",
           {{"step", std::to_string(scan.repeated->found)}, {"rank", std::to_string(rank)}},
           {step_evidence(steps[scan.repeated->index])},
           rank});
    }
  }
}

// The samples/step the baseline ran with: its first step that logged them (0: not known).
std::int64_t baseline_samples_per_step(const baseline::Baseline& b) {
  for (const baseline::BaselineStep& s : b.steps) {
    if (s.samples_per_step) return *s.samples_per_step;
  }
  return 0;
}

void samples_per_step(const MetricInput& in, std::vector<Finding>& out) {
  if (in.baseline == nullptr) return;
  const std::int64_t expected = baseline_samples_per_step(*in.baseline);
  if (expected <= 0) return;
  const auto batches = all_of<logs::BatchRecord>(in.logs);
  std::int64_t found = 0;
  Evidence evidence;
  const logs::BatchRecord* batch = batches.empty() ? nullptr : batches.front().record;
  if (batch != nullptr && batch->samples_per_step > 0) {
    found = batch->samples_per_step;
    evidence = evidence_of(
        batches.front(),
        fmt::format("ev=batch micro_batch_size={} grad_accum={} dp={} samples_per_step={}",
                    batch->micro_batch_size, batch->grad_accum, batch->dp,
                    batch->samples_per_step));
  } else {
    for (const auto& s : all_of<logs::StepRecord>(in.logs)) {
      if (s.record->samples_per_step) {
        found = *s.record->samples_per_step;
        evidence = step_evidence(s);
        evidence.text += fmt::format(" samples_per_step={}", found);
        break;
      }
    }
  }
  if (found == 0 || found == expected) return;
  const std::int64_t micro = batch != nullptr ? batch->micro_batch_size : 0;
  const std::int64_t accum = batch != nullptr ? batch->grad_accum : 0;
  const std::int64_t dp = batch != nullptr ? batch->dp : 0;
  const std::string setting = !in.configured.samples_per_step_fix.empty()
                                  ? in.configured.samples_per_step_fix
                                  : baseline::samples_per_step_fix(expected, micro, accum, dp);
  out.push_back({"samples_per_step_mismatch",
                 {{"found", std::to_string(found)},
                  {"expected", std::to_string(expected)},
                  {"micro", micro > 0 ? std::to_string(micro) : "?"},
                  {"accum", accum > 0 ? std::to_string(accum) : "?"},
                  {"dp", dp > 0 ? std::to_string(dp) : "?"},
                  {"setting", setting}},
                 {evidence},
                 evidence.rank});
}

// The first step whose lr differs from the baseline's by the world size (or dp, or its square
// root), with the factor; nullptr when none does.
struct LrScaling {
  const Sourced<logs::StepRecord>* step = nullptr;
  double ratio = 0;
  double baseline_lr = 0;
  std::int64_t dp = 0;
  std::string scaled_by;  ///< the factor in the words of the setting that explains it
};

LrScaling lr_scaled_with_world(const MetricInput& in,
                               const std::vector<Sourced<logs::StepRecord>>& steps,
                               const std::vector<std::optional<double>>& base_lr) {
  LrScaling out;
  for (const auto& s : steps) {
    const auto step = s.record->global_step;
    if (!s.record->lr || step < 0 || static_cast<std::size_t>(step) >= base_lr.size() ||
        !base_lr[static_cast<std::size_t>(step)]) {
      continue;
    }
    if (!baseline::within_tolerance(*s.record->lr, *base_lr[static_cast<std::size_t>(step)],
                                    in.limits.lr)) {
      out.step = &s;
      break;
    }
  }
  if (out.step == nullptr) return out;
  std::int64_t dp = 0;
  for (const auto& b : all_of<logs::BatchRecord>(in.logs)) dp = std::max(dp, b.record->dp);
  int world = 0;
  for (const auto& run : all_of<logs::RunRecord>(in.logs))
    world = std::max(world, run.record->world_size);
  if (world == 0 && in.launch != nullptr) world = in.launch->planned_world_size;
  out.baseline_lr = *base_lr[static_cast<std::size_t>(out.step->record->global_step)];
  out.ratio = out.baseline_lr != 0 ? *out.step->record->lr / out.baseline_lr : 0;
  out.dp = dp > 0 ? dp : world;
  const auto matches = [&](double n) { return n > 1 && std::fabs(out.ratio - n) <= 0.01 * n; };
  if (matches(static_cast<double>(dp))) {
    out.scaled_by = fmt::format("data-parallel size (dp {})", dp);
  } else if (matches(static_cast<double>(world))) {
    out.scaled_by = fmt::format("world size ({})", world);
  } else if (matches(std::sqrt(static_cast<double>(dp)))) {
    out.scaled_by = fmt::format("square root of the data-parallel size (√{} = {})", dp,
                                number(std::sqrt(static_cast<double>(dp))));
  } else {
    out.step = nullptr;
  }
  return out;
}

// The setting to keep when the lr was scaled: train.lr as configured (the logged baseline lr
// may be a warmup fraction of it), else as the baseline ran with.
std::string keep_lr(const MetricInput& in) {
  return in.configured.lr ? fmt::format("train.lr at its configured {}", number(*in.configured.lr))
                          : std::string("train.lr at the value the baseline ran with");
}

std::optional<double> field_of(const logs::StepRecord& r, baseline::Metric metric) {
  return metric == baseline::Metric::kLoss ? r.loss : r.grad_norm;
}

// The baseline's values in step order.
std::vector<baseline::SeriesValue> baseline_series(const std::vector<std::optional<double>>& b) {
  std::vector<baseline::SeriesValue> out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i]) out.push_back({static_cast<std::int64_t>(i), *b[i]});
  }
  return out;
}

// The first step of `steps` whose `metric` leaves the gate's tolerance of the baseline `base`,
// as the gate's check judges it (gates/baseline_checks.cpp): one step at a time, or for the
// band policy the first step of a confirmed run of moving averages outside it. A non-finite
// value ends the search (loss_non_finite speaks for it).
const Sourced<logs::StepRecord>* first_outside(const std::vector<Sourced<logs::StepRecord>>& steps,
                                               const std::vector<std::optional<double>>& base,
                                               baseline::Metric metric,
                                               const baseline::Tolerance& tolerance) {
  if (tolerance.policy == baseline::Policy::kBand) {
    std::vector<baseline::SeriesValue> observed;
    for (const auto& s : steps) {
      if (auto v = field_of(*s.record, metric)) observed.push_back({s.record->global_step, *v});
    }
    const baseline::BandComparison band =
        baseline::compare_band(baseline_series(base), observed, tolerance.band, tolerance.rel_tol);
    if (!band.first_divergent) return nullptr;
    const std::int64_t step = band.judged[*band.first_divergent].step;
    for (const auto& s : steps) {
      if (s.record->global_step == step) return &s;
    }
    return nullptr;
  }
  for (const auto& s : steps) {
    const auto step = s.record->global_step;
    const auto value = field_of(*s.record, metric);
    if (step < 0 || static_cast<std::size_t>(step) >= base.size() || !value ||
        !base[static_cast<std::size_t>(step)]) {
      continue;
    }
    if (!std::isfinite(*value)) return nullptr;
    if (!baseline::within_tolerance(*value, *base[static_cast<std::size_t>(step)], tolerance)) {
      return &s;
    }
  }
  return nullptr;
}

// A gate stopped at grad_norm's divergence while the loss still matched: the gradients differ
// though the forward pass agrees.
void grad_norm_while_loss_matches(const MetricInput& in,
                                  const std::vector<Sourced<logs::StepRecord>>& steps,
                                  std::vector<Finding>& out) {
  const std::vector<std::optional<double>> base =
      baseline::values_by_step(*in.baseline, baseline::Metric::kGradNorm);
  const auto* s = first_outside(steps, base, baseline::Metric::kGradNorm, in.limits.grad_norm);
  if (s == nullptr) return;
  const auto step = static_cast<std::size_t>(s->record->global_step);
  if (in.configured.pp == 1) {
    // Data parallel alone: no pipeline cause. The norm the program measured before clipping
    // (clip_grad_norm_'s) over the baseline's, step by step: larger at nearly every step, by
    // about the world size, is a sum where a mean belongs.
    std::vector<double> ratios;
    for (const auto& x : steps) {
      const auto at = static_cast<std::size_t>(x.record->global_step);
      const auto norm =
          x.record->grad_norm_preclip ? x.record->grad_norm_preclip : x.record->grad_norm;
      if (!norm || at >= base.size() || !base[at] || *base[at] <= 0) continue;
      ratios.push_back(*norm / *base[at]);
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios.empty() ? 0 : ratios[ratios.size() / 2];
    const auto above =
        std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 1.2; });
    if (in.configured.dp > 1 && median >= 1.3 &&
        static_cast<double>(above) >= 0.8 * static_cast<double>(ratios.size())) {
      out.push_back(
          {"grad_norm_scaled_up_dp",
           {{"ratio", fmt::format("{:.2f}", median)},
            {"dp", std::to_string(in.configured.dp)},
            {"steps", fmt::format("{} step{}", ratios.size(), ratios.size() == 1 ? "" : "s")},
            {"preclip", steps.front().record->grad_norm_preclip
                            ? std::string("before clipping, as clip_grad_norm_ measured it")
                            : std::string("as logged")}},
           {step_evidence(*s)},
           s->record->at.rank});
      return;
    }
    out.push_back({"grad_norm_diverges_dp",
                   {{"step", std::to_string(step)},
                    {"grad_norm", number(*s->record->grad_norm)},
                    {"baseline_grad_norm", number(*base[step])}},
                   {step_evidence(*s)},
                   s->record->at.rank});
    return;
  }
  out.push_back({"grad_norm_diverges_while_loss_matches",
                 {{"step", std::to_string(step)},
                  {"grad_norm", number(*s->record->grad_norm)},
                  {"baseline_grad_norm", number(*base[step])}},
                 {step_evidence(*s)},
                 s->record->at.rank});
}

// Step 0 differs from the baseline beyond the gate's tolerance, yet the initial parameters are
// the baseline's and the difference is within the baseline's own step-to-step noise: the
// trainer's batches depend on the layout (issue 14 item 6). A gate that already compares as a
// band has allowed for that, so this finding is for step-by-step policies only.
std::optional<Finding> layout_dependent(const MetricInput& in,
                                        const std::vector<std::optional<double>>& base_loss,
                                        const Sourced<logs::StepRecord>& step0) {
  const baseline::Tolerance& t = in.limits.loss;
  const std::string& digest = in.baseline->structure.param_digest;
  if (t.policy == baseline::Policy::kBand || digest.empty() || in.order_not_the_layouts) {
    return {};
  }
  const auto models = all_of<logs::ModelRecord>(in.logs);
  const Sourced<logs::ModelRecord>* model = nullptr;
  for (const auto& m : models) {
    if (m.record->param_digest.empty()) continue;
    if (m.record->param_digest != digest) return {};
    if (model == nullptr) model = &m;
  }
  if (model == nullptr) return {};
  std::vector<double> values;
  for (const auto& v : base_loss) {
    if (v) values.push_back(*v);
  }
  const baseline::SeriesNoise noise = baseline::series_noise(values, t.band.window);
  const double reference = *base_loss[0];
  const double loss = *step0.record->loss;
  const auto [low, high] = baseline::single_step_band(reference, noise, t.band.sigmas, t.rel_tol);
  if (noise.residuals == 0 || loss < low || loss > high) return {};
  return Finding{"loss_depends_on_layout",
                 {{"loss", number(loss)},
                  {"baseline_loss", number(reference)},
                  {"digest", model->record->param_digest},
                  {"noise", noise.log_scale ? fmt::format("{:.3g}%", 100 * std::expm1(noise.sigma))
                                            : number(noise.sigma)},
                  {"low", number(low)},
                  {"high", number(high)}},
                 {step_evidence(step0),
                  evidence_of(*model, "ev=model param_digest=" + model->record->param_digest)},
                 step0.record->at.rank};
}

// Loss against the baseline: wrong from step 0 (→ shapes), or right at first then diverging
// (→ dp; the learning rate scaled with the world size when the logged lr says so). A gate
// stopped at the lr's divergence, before the loss could follow, gets the lr finding alone.
void loss_against_baseline(const MetricInput& in, std::vector<Finding>& out) {
  if (in.baseline == nullptr) return;
  const std::vector<std::optional<double>> base_loss =
      baseline::values_by_step(*in.baseline, baseline::Metric::kLoss);
  if (base_loss.empty()) return;
  const auto by_rank = steps_by_rank(in.logs);
  const auto* steps = owner_steps(by_rank, in.configured.loss_rank);
  if (steps == nullptr) return;
  const std::vector<std::optional<double>> base_lr =
      baseline::values_by_step(*in.baseline, baseline::Metric::kLr);
  const Sourced<logs::StepRecord>* diverged =
      first_outside(*steps, base_loss, baseline::Metric::kLoss, in.limits.loss);
  const LrScaling lr = base_lr.empty() ? LrScaling{} : lr_scaled_with_world(in, *steps, base_lr);
  if (diverged == nullptr) {
    if (lr.step == nullptr) grad_norm_while_loss_matches(in, *steps, out);
    if (lr.step != nullptr) {
      out.push_back({"lr_scaled_before_loss_diverged",
                     {{"step", std::to_string(lr.step->record->global_step)},
                      {"ratio", number(lr.ratio)},
                      {"lr", number(*lr.step->record->lr)},
                      {"baseline_lr", number(lr.baseline_lr)},
                      {"dp", std::to_string(lr.dp)},
                      {"scaled_by", lr.scaled_by},
                      {"keep", keep_lr(in)}},
                     {step_evidence(*lr.step)},
                     lr.step->record->at.rank});
    }
    return;
  }
  const logs::StepRecord& r = *diverged->record;
  const std::string baseline_loss = number(*base_loss[static_cast<std::size_t>(r.global_step)]);
  if (r.global_step == 0) {
    if (auto layout = layout_dependent(in, base_loss, *diverged)) {
      out.push_back(std::move(*layout));
      return;
    }
    out.push_back({"loss_wrong_from_first_step",
                   {{"loss", number(*r.loss)}, {"baseline_loss", baseline_loss}},
                   {step_evidence(*diverged)},
                   r.at.rank});
    return;
  }
  if (lr.step != nullptr) {
    const std::string keep = keep_lr(in);
    out.push_back({"lr_scaled_with_world_size",
                   {{"step", std::to_string(r.global_step)},
                    {"lr_step", std::to_string(lr.step->record->global_step)},
                    {"ratio", number(lr.ratio)},
                    {"lr", number(*lr.step->record->lr)},
                    {"baseline_lr", number(lr.baseline_lr)},
                    {"dp", std::to_string(lr.dp)},
                    {"scaled_by", lr.scaled_by},
                    {"keep", keep}},
                   {step_evidence(*lr.step), step_evidence(*diverged)},
                   r.at.rank});
    return;
  }
  out.push_back({"loss_diverges_after_match",
                 {{"step", std::to_string(r.global_step)},
                  {"loss", number(*r.loss)},
                  {"baseline_loss", baseline_loss}},
                 {step_evidence(*diverged)},
                 r.at.rank});
}

const std::vector<MetricRuleSpec>& specs() {
  static const std::vector<MetricRuleSpec> kSpecs = {
      {"baseline_regression",
       {"file", "step", "metric", "headline", "moved", "last_good", "accept"}},
      {"loss_non_finite", {"step", "value"}},
      {"grad_norm_growing", {"first_step", "last_step", "first", "last"}},
      {"grad_norm_zero", {"step"}},
      {"step_gap", {"expected", "found", "rank"}},
      {"step_repeated", {"step", "rank"}},
      {"samples_per_step_mismatch", {"found", "expected", "micro", "accum", "dp", "setting"}},
      {"lr_scaled_with_world_size",
       {"step", "lr_step", "ratio", "lr", "baseline_lr", "dp", "scaled_by", "keep"}},
      {"lr_scaled_before_loss_diverged",
       {"step", "ratio", "lr", "baseline_lr", "dp", "scaled_by", "keep"}},
      {"grad_norm_diverges_while_loss_matches", {"step", "grad_norm", "baseline_grad_norm"}},
      {"loss_diverges_after_match", {"step", "loss", "baseline_loss"}},
      {"loss_wrong_from_first_step", {"loss", "baseline_loss"}},
      {"stage_without_layers",
       {"stage", "num_stages", "first_layer", "last_layer", "split_points"}},
      {"loss_depends_on_layout", {"loss", "baseline_loss", "digest", "noise", "low", "high"}},
      {"stage_without_forward", {"stage", "first_layer", "last_layer", "split_point"}},
      {"middle_stage_loss", {"stage", "last_stage", "step"}},
      {"stage_param_sum_mismatch", {"stage_sum", "total", "difference", "tied", "detail"}},
      {"stage_idle", {"rank", "stage", "idle_s", "waits_for", "detail"}},
      {"rank_stalled", {"rank", "where", "idle_s"}},
      {"rank_behind_collective", {"rank", "idle_s", "collective", "stack"}},
      {"collective_desync", {"rank", "idle_s", "collective", "stack"}},
      {"collective_split", {"odd", "collective", "step", "kind", "sites"}},
      {"collective_never_reached", {"rank", "ranks", "collective", "last", "step"}},
      {"multiple_checkpoint_writers", {"ranks", "count"}},
      {"world_size_exceeds_processes", {"planned", "started"}},
      {"env_mismatch", {"name", "values"}},
      {"process_group_not_formed", {"missing", "world_size"}},
      {"program_not_distributed", {"ranks"}},
      {"resumed_earlier_checkpoint", {"path", "writer", "rank"}},
      {"model_unseeded", {"digest", "baseline_digest"}},
      {"replicas_diverged", {"step", "rank_a", "rank_b"}},
      {"grad_norm_scaled_up_dp", {"ratio", "dp", "steps", "preclip"}},
      {"grad_norm_diverges_dp", {"step", "grad_norm", "baseline_grad_norm"}},
      {"replicas_start_apart", {"rank_a", "digest_a", "rank_b", "digest_b"}},
      {"duplicate_samples", {"step", "rank_a", "rank_b"}},
      {"samples_dropped", {"step", "count", "baseline", "missing"}},
      {"samples_added", {"step", "count", "baseline", "missing"}},
      {"samples_repeated",
       {"step", "rank", "first_rank", "first_step", "steps", "repeats", "reads", "ranks"}},
      {"port_held_by_process", {"port", "pid", "command"}},
      {"rank_exited_first", {"rank", "how", "detail"}},
  };
  return kSpecs;
}

}  // namespace

std::span<const MetricRuleSpec> metric_rule_specs() { return specs(); }

std::vector<Diagnosis> apply_metric_rules(const Catalog& catalog, const MetricInput& input) {
  std::vector<Finding> findings;
  loss_non_finite(input, findings);
  grad_norm_checks(input, findings);
  step_sequence(input, findings);
  samples_per_step(input, findings);
  if (input.regression != nullptr) {
    findings.push_back(
        {"baseline_regression", input.regression->values, input.regression->evidence, -1});
  } else {
    loss_against_baseline(input, findings);
  }
  detail::pipeline_rules(input, findings);
  detail::launch_rules(input, findings);

  std::vector<Diagnosis> out;
  for (Finding& f : findings) {
    const RuleText* rule = catalog.rule(f.rule);
    if (rule == nullptr) continue;  // the catalog leaves this rule out
    const EntryText& t = rule->text;
    Diagnosis d;
    d.id = t.id;
    d.klass = t.klass;
    d.gate = t.gate;
    d.confidence = t.confidence;
    d.specificity = t.specificity;
    d.symptom = fill_template(t.symptom, f.values);
    d.cause = fill_template(t.cause, f.values);
    d.fix = fill_template(t.fix, f.values);
    d.failed_rank = f.failed_rank;
    d.matches = static_cast<std::int64_t>(f.evidence.size());
    d.evidence = std::move(f.evidence);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace bigmac::diagnose
