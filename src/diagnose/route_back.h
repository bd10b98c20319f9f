#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/diagnosis.h"

namespace bigmac::diagnose {

// `gate_ids` are the gate catalog's ids in their order (the gate files, gates/gate_catalog.h):
// the only list of gates there is.

/// The position of `gate` in `gate_ids` (single = 0 … target = 4); -1 when unknown.
int gate_order(std::string_view gate, std::span<const std::string> gate_ids);

/// Where a failure of `failed_gate` sends the bring-up back to, given the gate a diagnosis or
/// a check proposes: the proposal when it is that gate or an earlier one; otherwise the failed
/// gate itself, since a gate after it cannot be where its failure is fixed (a `single` run
/// that shows a shape error is fixed at `single`, not at `shapes`).
std::string route_back_at(std::string_view proposed, std::string_view failed_gate,
                          std::span<const std::string> gate_ids);

/// Applies route_back_at to every diagnosis of a failure at `failed_gate`; a diagnosis whose
/// catalog entry names a later gate says so in its fix.
void route_back_within(std::vector<Diagnosis>& diagnoses, std::string_view failed_gate,
                       std::span<const std::string> gate_ids);

}  // namespace bigmac::diagnose
