#include "gates/gate_catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>

#include "baseline/baseline.h"
#include "core/edit_distance.h"
#include "gates/check.h"
#include "gates/series_rules.h"

namespace bigmac::gates {

tl::expected<GateCatalog, Errors> GateCatalog::load(const std::filesystem::path& stages_dir,
                                                    const config::Config& config) {
  auto specs = load_gate_specs(stages_dir);
  if (!specs) return tl::unexpected(specs.error());
  Errors errors;
  // The gate files are the one list of gate ids: an override must name one of them.
  std::vector<std::string> ids;
  for (const GateSpec& spec : *specs) ids.push_back(spec.id);
  const std::vector<std::string_view> id_views(ids.begin(), ids.end());
  for (const auto& [gate, overrides] : config.gate_overrides) {
    if (std::find(ids.begin(), ids.end(), gate) != ids.end()) continue;
    const auto near = closest_match(gate, id_views);
    Error e = make_error(ErrorKind::kConfig,
                         fmt::format("unknown gate '{}'{}: the gates of {} are {}", gate,
                                     near ? fmt::format(" (did you mean '{}'?)", *near) : "",
                                     stages_dir.string(), fmt::join(ids, ", ")));
    e.key = "gates." + gate;
    if (!overrides.empty()) {
      const config::Origin& o = overrides.begin()->second.origin;
      if (o.kind == config::SourceKind::kFile) {
        e.file = o.where;
        e.line = o.line;
        e.column = o.column;
      } else {
        e.message += " (set by " + o.describe() + ")";
      }
    }
    errors.push_back(e);
  }
  GateCatalog catalog;
  for (GateSpec& spec : *specs) {
    auto it = config.gate_overrides.find(spec.id);
    if (it == config.gate_overrides.end()) {
      catalog.specs.push_back(std::move(spec));
      continue;
    }
    auto applied = apply_overrides(std::move(spec), it->second);
    if (!applied) {
      errors.insert(errors.end(), applied.error().begin(), applied.error().end());
    } else {
      catalog.specs.push_back(std::move(*applied));
    }
  }
  // `[gates.<id>]` may set a route back too: the same rule as in the gate files.
  if (errors.empty()) errors = check_route_backs(catalog.specs);
  if (!errors.empty()) return tl::unexpected(errors);
  return catalog;
}

std::vector<std::string> GateCatalog::ids() const {
  std::vector<std::string> out;
  for (const GateSpec& s : specs) out.push_back(s.id);
  return out;
}

baseline::ComparisonPolicy comparison_policy(const GateSpec& spec) {
  baseline::ComparisonPolicy policy;
  const CheckParams params(spec.params);
  policy.loss = metric_tolerance(params, baseline::Metric::kLoss);
  policy.grad_norm = metric_tolerance(params, baseline::Metric::kGradNorm);
  policy.lr = metric_tolerance(params, baseline::Metric::kLr);
  return policy;
}

std::string trainer_identity(const std::filesystem::path& binary) {
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0) return binary.string() + " (missing)";
  return fmt::format("{} {} {}.{:09}", binary.string(), static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
}

GateInputs gate_inputs(const GatePlan& plan, const std::filesystem::path& trainer_binary,
                       const std::string& baseline_digest) {
  GateInputs in;
  in.config = plan.inputs;
  in.trainer = trainer_binary.empty() ? std::string() : trainer_identity(trainer_binary);
  in.baseline = baseline_digest;
  return in;
}

}  // namespace bigmac::gates
