#pragma once

#include "config/config.h"

namespace bigmac::config {

/// Computes world_size, dp, global_batch, the effective micro-batch count and the auto split
/// points, and records each as a derived Setting (with its formula as provenance). A value
/// that cannot be derived (world size not divisible) is left 0; check_constraints reports it.
void derive(Config& config);

/// Every hard constraint of docs/architecture.md §2, each violation printing the numbers involved.
Errors check_constraints(const Config& config);

/// "R:K" fault arguments: two integers separated by a colon.
std::optional<std::pair<int, int>> parse_rank_pair(std::string_view text);

}  // namespace bigmac::config
