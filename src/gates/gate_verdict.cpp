#include "gates/gate_verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/json_file.h"
#include "gates/check_registry.h"

namespace bigmac::gates {
namespace {

nlohmann::json divergence_json(const MetricDivergence& d) {
  nlohmann::json j = {{"metric", d.metric},
                      {"step", d.step},
                      {"observed", json_real(d.observed)},  // NaN at the step a loss became NaN
                      {"baseline", json_real(d.baseline)},
                      {"policy", baseline::policy_name(d.tolerance.policy)},
                      {"rel_tol", d.tolerance.rel_tol},
                      {"abs_tol", d.tolerance.abs_tol},
                      {"factor", d.tolerance.factor}};
  // The band's parameters and measured noise mean something only under the band policy.
  if (d.tolerance.policy == baseline::Policy::kBand) {
    j["band"] = {{"window", d.tolerance.band.window},
                 {"sigmas", d.tolerance.band.sigmas},
                 {"confirm", d.tolerance.band.confirm},
                 {"noise_sigma", d.tolerance.band_noise.sigma},
                 {"noise_log_scale", d.tolerance.band_noise.log_scale},
                 {"noise_residuals", d.tolerance.band_noise.residuals}};
  }
  return j;
}

MetricDivergence divergence_from_json(const nlohmann::json& j) {
  MetricDivergence d;
  d.metric = j.value("metric", "");
  d.step = j.value("step", std::int64_t{0});
  if (const auto it = j.find("observed"); it != j.end())
    d.observed = real_from_json(*it).value_or(0.0);
  if (const auto it = j.find("baseline"); it != j.end())
    d.baseline = real_from_json(*it).value_or(0.0);
  // An unknown policy name (a newer writer) keeps the default rather than dropping the rest.
  if (auto policy = baseline::parse_policy(j.value("policy", ""))) d.tolerance.policy = *policy;
  d.tolerance.rel_tol = j.value("rel_tol", d.tolerance.rel_tol);
  d.tolerance.abs_tol = j.value("abs_tol", d.tolerance.abs_tol);
  d.tolerance.factor = j.value("factor", d.tolerance.factor);
  if (const auto band = j.find("band"); band != j.end() && band->is_object()) {
    baseline::Tolerance& t = d.tolerance;
    t.band.window = band->value("window", t.band.window);
    t.band.sigmas = band->value("sigmas", t.band.sigmas);
    t.band.confirm = band->value("confirm", t.band.confirm);
    t.band_noise.sigma = band->value("noise_sigma", 0.0);
    t.band_noise.log_scale = band->value("noise_log_scale", false);
    t.band_noise.residuals = band->value("noise_residuals", std::size_t{0});
  }
  return d;
}

// The finding of `field`, created in first-seen order.
UnobservableFinding& finding_of(std::vector<UnobservableFinding>& findings,
                                const MissingField& field) {
  for (UnobservableFinding& f : findings) {
    if (f.field == field.field) return f;
  }
  findings.push_back(UnobservableFinding{field.field, field.what_to_log, {}, {}});
  return findings.back();
}

nlohmann::json finding_json(const UnobservableFinding& f) {
  return {{"field", f.field},
          {"what_to_log", f.what_to_log},
          {"checks", f.checks},
          {"required", f.required}};
}

// The strings of list `key`; anything else in it is skipped rather than failing the whole file.
std::vector<std::string> strings_of(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (const auto it = j.find(key); it != j.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

UnobservableFinding finding_from_json(const nlohmann::json& j) {
  UnobservableFinding f;
  f.field = j.value("field", "");
  f.what_to_log = j.value("what_to_log", "");
  f.checks = strings_of(j, "checks");
  f.required = strings_of(j, "required");
  return f;
}

}  // namespace

bool UnobservableFinding::is_required(const std::string& check) const {
  return std::find(required.begin(), required.end(), check) != required.end();
}

std::string UnobservableFinding::text() const {
  return fmt::format("unobservable: the trainer logs no {}; {}", field, what_to_log);
}

const UnobservableFinding* GateVerdict::first_required_unobservable() const {
  for (const UnobservableFinding& f : unobservable) {
    if (!f.required.empty()) return &f;
  }
  return nullptr;
}

const CheckResult* GateVerdict::first_failure() const {
  const CheckResult* first = nullptr;
  for (const CheckResult& r : results) {
    if (r.passed) continue;
    if (!first) first = &r;
    // A gate stopped early is decided by the failure certain at the earliest step.
    if (!stopped_early.empty() && r.certain_at &&
        (!first->certain_at || *r.certain_at < *first->certain_at)) {
      first = &r;
    }
  }
  return first;
}

std::string GateVerdict::summary() const {
  if (passed) return fmt::format("{} passed ({} checks)", gate_id, results.size());
  const std::string how = stopped_early.empty() ? "" : " (" + stopped_early + ")";
  const CheckResult* f = first_failure();
  if (!f) {
    if (const UnobservableFinding* u = first_required_unobservable()) {
      return fmt::format("{} failed{}: required check {} unobservable: the trainer logs no {}; {}",
                         gate_id, how, u->required.front(), u->field, u->what_to_log);
    }
    return fmt::format("{} failed{}", gate_id, how);
  }
  return fmt::format("{} failed{}: {}: {}", gate_id, how, f->name, f->message);
}

std::vector<const CheckResult*> GateVerdict::warnings() const {
  std::vector<const CheckResult*> out;
  for (const CheckResult& r : results) {
    if (r.passed && !r.warning.empty()) out.push_back(&r);
  }
  return out;
}

GateVerdict evaluate_gate(const GateSpec& spec, const GatePlan& plan, const GateEvidence& evidence,
                          const baseline::Baseline* reference) {
  GateVerdict v;
  v.gate_id = spec.id;
  CheckContext ctx{evidence, plan, reference, CheckParams(spec.params)};
  for (const CheckSpec& check : spec.checks) {
    if (check.needs_baseline && !reference) {
      v.not_run.push_back(check.name + ": no baseline yet; this run records one");
      continue;
    }
    const CheckFunction run = find_check(check.name);
    CheckResult r =
        run ? run(ctx) : fail(check.name, "no such check (the gate file names an unknown check)");
    r.name = check.name;
    if (!r.unobservable.empty()) {
      const bool required = is_required(spec, check.name);
      for (const MissingField& field : r.unobservable) {
        UnobservableFinding& finding = finding_of(v.unobservable, field);
        finding.checks.push_back(check.name);
        if (required) finding.required.push_back(check.name);
      }
      continue;
    }
    if (r.passed) {
      r.route_back.clear();
    } else if (r.route_back.empty()) {
      r.route_back = check.route_back.empty() ? spec.route_back : check.route_back;
    }
    v.results.push_back(std::move(r));
  }
  const CheckResult* f = v.first_failure();
  const bool blind = v.first_required_unobservable() != nullptr;
  v.passed = !v.results.empty() && !f && !blind;
  // Not logging what the gate requires is fixed in the trainer and judged at this gate.
  if (f)
    v.route_back = f->route_back;
  else if (blind)
    v.route_back = spec.id;
  return v;
}

std::string format_verdict(const GateVerdict& v) {
  std::string out = fmt::format("gate {}: {}{}\n", v.gate_id, v.passed ? "PASSED" : "FAILED",
                                v.stopped_early.empty() ? "" : " — " + v.stopped_early);
  for (const CheckResult& r : v.results) {
    out += fmt::format("  {} {:<24} {}\n", r.passed ? "ok  " : "FAIL", r.name, r.message);
    if (!r.warning.empty()) out += fmt::format("         warning: {}\n", r.warning);
    if (r.passed) continue;
    std::size_t shown = 0;
    for (const CheckEvidence& e : r.evidence) {
      if (++shown > 6) break;
      out += e.rank >= 0 ? fmt::format("         rank {} line {}: {}\n", e.rank, e.line, e.text)
                         : fmt::format("         {}\n", e.text);
    }
    out += fmt::format("         route back: gate {}\n", r.route_back);
  }
  for (const UnobservableFinding& u : v.unobservable) {
    const bool required = !u.required.empty();
    out += fmt::format(
        "  {} {:<24} {}\n", required ? "FAIL" : "warn",
        fmt::format("{}", fmt::join(u.checks, ", ")),
        fmt::format(
            "unobservable{}: the trainer logs no {}",
            required ? fmt::format(" (required: {})", fmt::join(u.required, ", ")) : std::string(),
            u.field));
    out += fmt::format("         to make {}: {}\n", u.checks.size() == 1 ? "it" : "them",
                       u.what_to_log);
  }
  for (const std::string& n : v.not_run) out += "  skip " + n + "\n";
  return out;
}

nlohmann::json to_json(const GateVerdict& v) {
  nlohmann::json results = nlohmann::json::array();
  for (const CheckResult& r : v.results) {
    nlohmann::json evidence = nlohmann::json::array();
    for (const CheckEvidence& e : r.evidence)
      evidence.push_back({{"rank", e.rank}, {"line", e.line}, {"text", e.text}});
    nlohmann::json item = {{"name", r.name},
                           {"passed", r.passed},
                           {"message", r.message},
                           {"evidence", evidence},
                           {"route_back", r.route_back}};
    if (r.divergence) item["divergence"] = divergence_json(*r.divergence);
    if (!r.warning.empty()) item["warning"] = r.warning;
    results.push_back(std::move(item));
    if (r.certain_at) results.back()["certain_at"] = *r.certain_at;
  }
  nlohmann::json unobservable = nlohmann::json::array();
  for (const UnobservableFinding& u : v.unobservable) unobservable.push_back(finding_json(u));
  return {{"gate", v.gate_id},           {"passed", v.passed},   {"route_back", v.route_back},
          {"checks", results},           {"not_run", v.not_run}, {"stopped_early", v.stopped_early},
          {"unobservable", unobservable}};
}

GateVerdict verdict_from_json(const nlohmann::json& j) {
  GateVerdict v;
  if (!j.is_object()) return v;
  v.gate_id = j.value("gate", "");
  v.passed = j.value("passed", false);
  v.route_back = j.value("route_back", "");
  v.not_run = j.value("not_run", std::vector<std::string>{});
  v.stopped_early = j.value("stopped_early", "");
  // Absent in verdicts written before checks could be unobservable.
  if (const auto u = j.find("unobservable"); u != j.end() && u->is_array()) {
    for (const auto& item : *u) {
      if (item.is_object()) v.unobservable.push_back(finding_from_json(item));
    }
  }
  for (const auto& c : j.value("checks", nlohmann::json::array())) {
    CheckResult r;
    r.name = c.value("name", "");
    r.passed = c.value("passed", false);
    r.message = c.value("message", "");
    r.route_back = c.value("route_back", "");
    r.warning = c.value("warning", "");  // absent before checks could warn
    if (c.contains("certain_at") && c["certain_at"].is_number_integer())
      r.certain_at = c["certain_at"].get<std::int64_t>();
    for (const auto& e : c.value("evidence", nlohmann::json::array())) {
      r.evidence.push_back(CheckEvidence{
          json_int(e, "rank", -1), json_int(e, "line", std::int64_t{0}), e.value("text", "")});
    }
    if (const auto d = c.find("divergence"); d != c.end() && d->is_object()) {
      r.divergence = divergence_from_json(*d);
    }
    v.results.push_back(std::move(r));
  }
  return v;
}

}  // namespace bigmac::gates
