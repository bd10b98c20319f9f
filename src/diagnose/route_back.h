#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/diagnosis.h"

namespace bigmac::diagnose {

/// The position of a gate id in kGateIds (single = 0 … target = 4); -1 when unknown.
int gate_order(std::string_view gate);

/// Where a failure of `failed_gate` sends the bring-up back to, given the gate a diagnosis or
/// a check proposes: the proposal when it is that gate or an earlier one; otherwise the failed
/// gate itself, since a gate after it cannot be where its failure is fixed (a `single` run
/// that shows a shape error is fixed at `single`, not at `shapes`).
std::string route_back_at(std::string_view proposed, std::string_view failed_gate);

/// Applies route_back_at to every diagnosis of a failure at `failed_gate`; a diagnosis whose
/// catalog entry names a later gate says so in its fix.
void route_back_within(std::vector<Diagnosis>& diagnoses, std::string_view failed_gate);

}  // namespace bigmac::diagnose
