#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace bigmac::config {

/// How much `config show` prints.
struct PrintOptions {
  bool provenance = false;  ///< every place a value was set, the winner marked
};

/// The effective configuration as TOML-like text, in the order launch, schedule, model, then
/// trainer, faults, trace, derived values and gate overrides.
std::string format_config(const Config& config, const PrintOptions& options);

/// The same as JSON: table -> key -> value, or {value, source, assignments} with provenance.
nlohmann::json config_to_json(const Config& config, const PrintOptions& options);

/// A Value as JSON.
nlohmann::json value_to_json(const Value& value);

}  // namespace bigmac::config
