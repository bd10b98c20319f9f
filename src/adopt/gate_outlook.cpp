#include "adopt/gate_outlook.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "baseline/baseline.h"
#include "gates/gate_applicability.h"
#include "gates/gate_plan.h"

namespace bigmac::adopt {

bool GateOutlook::can_pass() const {
  if (!plan_error.empty() || !not_applicable.empty()) return false;
  return std::none_of(missing.begin(), missing.end(),
                      [](const gates::UnobservableFinding& f) { return !f.required.empty(); });
}

std::vector<GateOutlook> gate_outlook(const gates::GateCatalog& catalog,
                                      const config::Config& config,
                                      const gates::GateEvidence& evidence) {
  const baseline::Baseline trial =
      baseline::summarize_records(evidence.all_records(), "adopt trial", "");
  std::vector<GateOutlook> out;
  for (const gates::GateSpec& spec : catalog.specs) {
    GateOutlook gate{spec.id, spec.title, {}, {}, {}, {}};
    if (auto why = gates::not_applicable_reason(spec, config)) {
      gate.not_applicable = *why;
      out.push_back(std::move(gate));
      continue;
    }
    auto plan = gates::plan_gate(spec, config);
    if (!plan) {
      gate.plan_error = plan.error().format();
      out.push_back(std::move(gate));
      continue;
    }
    const gates::GateVerdict verdict = gates::evaluate_gate(spec, *plan, evidence, &trial);
    for (const gates::CheckResult& r : verdict.results) {
      if (r.unobservable.empty()) gate.can_make.push_back(r.name);
    }
    gate.missing = verdict.unobservable;
    // The probe digests every rank; the replica checks need two ranks, which the one-process
    // trial does not have: the gate makes them.
    const bool probe = !evidence.ranks.empty() &&
                       std::all_of(evidence.ranks.begin(), evidence.ranks.end(),
                                   [](const gates::RankEvidence& r) { return r.probe_ran; });
    if (probe) {
      std::erase_if(gate.missing, [&](const gates::UnobservableFinding& f) {
        if (f.field != "param_digest_after_step" && f.field != "input_digest") return false;
        for (const std::string& c : f.checks) gate.can_make.push_back(c);
        return true;
      });
    }
    out.push_back(std::move(gate));
  }
  return out;
}

std::string format_outlook(const std::vector<GateOutlook>& outlook) {
  std::string out;
  for (const GateOutlook& g : outlook) {
    if (!g.plan_error.empty()) {
      out += fmt::format("  {:<7} cannot be planned: {}\n", g.gate_id, g.plan_error);
      continue;
    }
    if (!g.not_applicable.empty()) {
      out += fmt::format("  {:<7} not applicable: {}\n", g.gate_id, g.not_applicable);
      continue;
    }
    out += fmt::format("  {:<7} {}: can check {}\n", g.gate_id,
                       g.can_pass() ? "can pass" : "cannot pass",
                       g.can_make.empty() ? std::string("nothing")
                                          : fmt::format("{}", fmt::join(g.can_make, ", ")));
    for (const gates::UnobservableFinding& f : g.missing) {
      out += fmt::format("          {} {} ({}): {}\n",
                         f.required.empty() ? "warning:" : "MISSING:", f.field,
                         fmt::join(f.checks, ", "), f.what_to_log);
    }
  }
  return out;
}

}  // namespace bigmac::adopt
