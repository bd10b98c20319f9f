#include "diagnose/route_back.h"

#include <fmt/format.h>

namespace bigmac::diagnose {

int gate_order(std::string_view gate, std::span<const std::string> gate_ids) {
  for (std::size_t i = 0; i < gate_ids.size(); ++i) {
    if (gate == gate_ids[i]) return static_cast<int>(i);
  }
  return -1;
}

std::string route_back_at(std::string_view proposed, std::string_view failed_gate,
                          std::span<const std::string> gate_ids) {
  const int failed = gate_order(failed_gate, gate_ids);
  const int target = gate_order(proposed, gate_ids);
  if (failed < 0) return std::string(proposed);  // a gate the catalog does not know: no order
  if (target < 0 || target > failed) return std::string(failed_gate);
  return std::string(proposed);
}

void route_back_within(std::vector<Diagnosis>& diagnoses, std::string_view failed_gate,
                       std::span<const std::string> gate_ids) {
  for (Diagnosis& d : diagnoses) {
    const std::string bounded = route_back_at(d.gate, failed_gate, gate_ids);
    if (bounded == d.gate) continue;
    if (!d.gate.empty()) {
      d.fix += fmt::format(
          " (fix it at gate {}, where it failed: the catalog's route back, {}, "
          "comes after it)",
          bounded, d.gate);
    }
    d.gate = bounded;
  }
}

}  // namespace bigmac::diagnose
