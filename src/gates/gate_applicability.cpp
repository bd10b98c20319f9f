#include "gates/gate_applicability.h"

#include <fmt/format.h>

namespace bigmac::gates {

std::optional<std::string> not_applicable_reason(const GateSpec& spec,
                                                 const config::Config& config) {
  switch (spec.applies) {
    case GateApplies::kAlways:
      return std::nullopt;
    case GateApplies::kPipeline: {
      if (config.parallel.pp_size > 1) return std::nullopt;
      const config::Setting* pp = config.settings.find("parallel.pp_size");
      const std::string where = pp ? pp->origin.describe() : "default";
      return fmt::format(
          "the target layout has no pipeline stages (parallel.pp_size = {}, {}): there is no "
          "cut to check; set parallel.pp_size to your target's stage count if it has any",
          config.parallel.pp_size, where);
    }
    case GateApplies::kDataParallel: {
      const int world = config.launch.world_size();
      const int ways = config.parallel.pp_size * config.parallel.tp_size;
      if (config.parallel.pp_size == 1 || world != ways) return std::nullopt;
      return fmt::format(
          "the target layout has no data-parallel replicas: its {} processes are {} pipeline "
          "stages × tp {} (dp 1), so there is no replica to keep in sync; raise "
          "launch.nproc_per_node to a multiple of pp × tp for data parallelism",
          world, config.parallel.pp_size, config.parallel.tp_size);
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> not_applicable_gates(const GateCatalog& catalog,
                                                        const config::Config& config) {
  std::map<std::string, std::string> out;
  for (const GateSpec& spec : catalog.specs) {
    if (auto why = not_applicable_reason(spec, config)) out.emplace(spec.id, std::move(*why));
  }
  return out;
}

std::string applicable_route(const GateCatalog& catalog, const config::Config& config,
                             const std::string& route) {
  const GateSpec* named = catalog.find(route);
  if (!named || !not_applicable_reason(*named, config)) return route;
  std::string best = catalog.specs.empty() ? route : catalog.specs.front().id;
  for (const GateSpec& spec : catalog.specs) {
    if (spec.order >= named->order) break;
    if (!not_applicable_reason(spec, config)) best = spec.id;
  }
  return best;
}

}  // namespace bigmac::gates
