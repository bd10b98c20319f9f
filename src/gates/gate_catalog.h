#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "baseline/comparison.h"
#include "config/config.h"
#include "core/error.h"
#include "gates/gate_inputs.h"
#include "gates/gate_plan.h"
#include "gates/gate_spec.h"

namespace bigmac::gates {

/// The gates of one run: the stages/ specs in order, with the configuration's `[gates.<id>]`
/// overrides applied. What the CLI loads once and plans every gate from.
struct GateCatalog {
  std::vector<GateSpec> specs;

  /// Loads `stages_dir` and applies `config.gate_overrides`; every error at once.
  static tl::expected<GateCatalog, Errors> load(const std::filesystem::path& stages_dir,
                                                const config::Config& config);

  /// By id or order number ("dp", "2"); nullptr when unknown.
  const GateSpec* find(std::string_view name) const { return find_gate(specs, name); }
  std::vector<std::string> ids() const;
};

/// The tolerances of a gate's baseline checks as a comparison policy (`compare --gate ID`).
baseline::ComparisonPolicy comparison_policy(const GateSpec& spec);

/// "path size mtime" of the trainer binary (empty parts when it cannot be read): cheap, and any
/// rebuild changes it.
std::string trainer_identity(const std::filesystem::path& binary);

/// What a gate run from `plan` depends on, for invalidation. `baseline_digest` is the digest
/// of the baseline file it compares with (empty: none).
GateInputs gate_inputs(const GatePlan& plan, const std::filesystem::path& trainer_binary,
                       const std::string& baseline_digest);

}  // namespace bigmac::gates
