#pragma once

#include <map>
#include <optional>
#include <string>

#include "config/config.h"
#include "gates/gate_catalog.h"
#include "gates/gate_spec.h"

namespace bigmac::gates {

/// Why `spec` does not apply to the target layout `config` describes: one sentence naming the
/// setting, its value and where it was set, and what would make the gate apply. Nothing when
/// the gate applies. A gate that does not apply is reported as not applicable, never run,
/// never failed (a DDP-only program has no pipeline cut for pp2 and shapes to check).
std::optional<std::string> not_applicable_reason(const GateSpec& spec,
                                                 const config::Config& config);

/// Every gate of `catalog` that does not apply, by id, with its reason.
std::map<std::string, std::string> not_applicable_gates(const GateCatalog& catalog,
                                                        const config::Config& config);

/// The gate a failure routes back to: `route` when it applies, else the closest gate before it
/// that does (a target without stages routes a step-0 loss mismatch from `shapes` to `dp`).
std::string applicable_route(const GateCatalog& catalog, const config::Config& config,
                             const std::string& route);

}  // namespace bigmac::gates
