#include "baseline/regression.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <set>

namespace bigmac::baseline {
namespace {

constexpr const char* kStructureFields[] = {"param_count", "param_digest", "input_shape",
                                            "input_dtype"};

void add_if_differs(std::vector<InputChange>& out, std::string what, const std::string& baseline,
                    const std::string& observed) {
  if (baseline.empty() || observed.empty() || baseline == observed) return;
  out.push_back({std::move(what), baseline, observed});
}

std::string optional_text(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : std::string();
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return shape.empty() ? std::string() : fmt::format("[{}]", fmt::join(shape, ","));
}

void config_changes(const Baseline& r, const Baseline& o, std::vector<InputChange>& out) {
  const auto& a = r.recorded.config;
  const auto& b = o.recorded.config;
  if (a.empty() || b.empty()) {
    // A baseline recorded before the settings were kept: only the digest can tell.
    add_if_differs(out, "config digest (the baseline keeps no settings to name the keys)",
                   r.fingerprint.config_digest, o.fingerprint.config_digest);
    return;
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  for (const std::string& key : keys) {
    const auto x = a.find(key);
    const auto y = b.find(key);
    const std::string before = x == a.end() ? "(unset)" : x->second;
    const std::string after = y == b.end() ? "(unset)" : y->second;
    if (before != after) out.push_back({"config " + key, before, after});
  }
}

bool is_structure(const InputChange& c) {
  for (const char* field : kStructureFields) {
    if (c.what == field) return true;
  }
  return false;
}

}  // namespace

std::string InputChange::describe() const {
  return fmt::format("{} {} → {}", what, baseline, observed);
}

std::vector<InputChange> input_changes(const Baseline& r, const Baseline& o) {
  std::vector<InputChange> out;
  const Fingerprint& a = r.fingerprint;
  const Fingerprint& b = o.fingerprint;
  add_if_differs(out, "tool", a.tool_version, b.tool_version);
  add_if_differs(out, "torch", a.torch_version, b.torch_version);
  add_if_differs(out, "python", a.python_version, b.python_version);
  // A single process has no backend ("none"); that difference is the world size, not a setup.
  if (a.backend != "none" && b.backend != "none")
    add_if_differs(out, "backend", a.backend, b.backend);
  add_if_differs(out, "device", a.device, b.device);
  add_if_differs(out, "dtype", a.dtype, b.dtype);
  add_if_differs(out, "seed", optional_text(a.seed), optional_text(b.seed));
  config_changes(r, o, out);
  add_if_differs(out, "trainer digest", r.recorded.trainer_digest, o.recorded.trainer_digest);
  add_if_differs(out, "param_count", optional_text(r.structure.param_count),
                 optional_text(o.structure.param_count));
  add_if_differs(out, "param_digest", r.structure.param_digest, o.structure.param_digest);
  add_if_differs(out, "input_shape", shape_text(r.structure.input_shape),
                 shape_text(o.structure.input_shape));
  add_if_differs(out, "input_dtype", r.structure.input_dtype, o.structure.input_dtype);
  return out;
}

std::string Regression::headline() const {
  return fmt::format("regression against {} {} ({})", baseline_file,
                     step ? fmt::format("at step {}", *step) : std::string("before step 0"),
                     metric);
}

std::string Regression::what_moved() const {
  if (changes.empty()) {
    return fmt::format(
        "the numbers moved with the same inputs: tool, torch, backend, device, dtype, seed, "
        "settings{} and model structure are those of the baseline, so a code change in the "
        "trainer or its data moved them",
        trainer_known ? ", trainer digest" : "");
  }
  std::vector<std::string> parts;
  for (const InputChange& c : changes) parts.push_back(c.describe());
  return fmt::format("what moved since the baseline: {}", fmt::join(parts, "; "));
}

std::vector<std::string> Regression::side_by_side() const {
  std::vector<std::string> out;
  for (const MetricComparison& m : metrics) {
    if (m.compared == 0) {
      out.push_back(fmt::format("{}: nothing compared ({} baseline steps not logged)",
                                metric_name(m.metric), m.missing));
      continue;
    }
    const std::string exact =
        m.exact ? std::string("exact: equal")
                : fmt::format("exact: differs from step {}", m.first_inexact_step.value_or(-1));
    const std::string within =
        m.within ? fmt::format("{}: within (max rel diff {:.3g})", m.tolerance.describe(),
                               m.max_rel_diff)
                 : fmt::format("{}: outside from step {}: {:.6g} vs baseline {:.6g}",
                               m.tolerance.describe(), m.first_divergent_step.value_or(-1),
                               m.observed_value, m.baseline_value);
    out.push_back(fmt::format("{}: {} | {}; {} steps compared{}", metric_name(m.metric), exact,
                              within, m.compared,
                              m.missing > 0 ? fmt::format(", {} not logged", m.missing) : ""));
  }
  return out;
}

std::string Regression::last_good() const {
  if (baseline_commit.empty()) {
    return "the baseline names no commit (record it where the CI sets GITHUB_SHA or "
           "CI_COMMIT_SHA to have the last passing commit named here)";
  }
  return fmt::format(
      "last passing commit: {} (the baseline was recorded there); `git log --oneline {}..HEAD` "
      "lists the changes since, `git bisect start HEAD {}` finds the one",
      baseline_commit, baseline_commit, baseline_commit);
}

std::optional<Regression> find_regression(const Baseline& reference, const std::string& file,
                                          const Baseline& observed,
                                          const ComparisonPolicy& policy) {
  for (const BaselineStep& s : observed.steps) {
    for (const std::optional<double>& value : {s.loss, s.grad_norm, s.lr}) {
      if (value && !std::isfinite(*value)) return std::nullopt;
    }
  }
  const Comparison comparison = compare_runs(reference, observed, policy);
  Regression r;
  r.baseline_file = file;
  r.metrics = comparison.metrics;
  r.changes = input_changes(reference, observed);
  r.trainer_known =
      !reference.recorded.trainer_digest.empty() && !observed.recorded.trainer_digest.empty();
  r.baseline_commit = reference.recorded.commit;
  for (const MetricComparison& m : comparison.metrics) {
    if (!m.first_divergent_step) continue;
    if (!r.step || *m.first_divergent_step < *r.step) {
      r.step = m.first_divergent_step;
      r.metric = std::string(metric_name(m.metric));
    }
  }
  if (r.step) return r;
  for (const InputChange& c : r.changes) {
    if (is_structure(c)) {
      r.metric = c.what;
      return r;
    }
  }
  return std::nullopt;
}

}  // namespace bigmac::baseline
