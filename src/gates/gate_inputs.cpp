#include "gates/gate_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/map_changes.h"

namespace bigmac::gates {

std::string GateInputs::difference(const GateInputs& now) const {
  std::vector<std::string> parts;
  for (const MapChange& c : map_changes(config, now.config)) {
    if (!c.after) {
      parts.push_back(fmt::format("{} no longer set (was {})", c.key, *c.before));
    } else if (!c.before) {
      parts.push_back(fmt::format("{} newly set to {}", c.key, *c.after));
    } else {
      parts.push_back(fmt::format("{} changed {} -> {}", c.key, *c.before, *c.after));
    }
  }
  std::string out;
  const std::size_t shown = std::min<std::size_t>(parts.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + parts[i];
  if (parts.size() > shown) out += fmt::format(" and {} more", parts.size() - shown);
  if (trainer != now.trainer) {
    out += (out.empty() ? "" : "; ") +
           fmt::format("trainer binary changed ({} -> {})", trainer, now.trainer);
  }
  if (baseline != now.baseline) {
    out += (out.empty() ? "" : "; ") + fmt::format("baseline changed ({} -> {})",
                                                   baseline.empty() ? "none" : baseline,
                                                   now.baseline.empty() ? "none" : now.baseline);
  }
  return out;
}

}  // namespace bigmac::gates
