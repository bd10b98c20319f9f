#pragma once

#include <string>

#include "config/config.h"

namespace bigmac::config {

/// The effective configuration as a TOML file the trainer reads back with load_config: every
/// schema key with its value (split points expanded), [logs.fields], and a header naming the
/// gate. Gate overrides are the orchestrator's business and are not written.
std::string to_toml(const Config& config, const std::string& header_comment);

/// The same values as YAML (`trainer.gate_config_format = "yaml"`), for Python trainers.
std::string to_yaml(const Config& config, const std::string& header_comment);

}  // namespace bigmac::config
