#pragma once

#include <string>

#include "audit/project_facts.h"
#include "core/error.h"

namespace bigmac::audit {

/// Reads a YAML, TOML or JSON file (by its extension) and adds a place for every key that
/// spells a parallel setting. The layer of a place is that of the nearest enclosing section
/// that names one ("model:", "[training]", "parallelism"), else the file's: model for a file
/// named after the model or a Hugging Face model config (model_type/architectures), else
/// schedule (a training configuration).
Expected<void> read_config_file(const std::string& text, const std::string& file,
                                ProjectFacts& facts);

}  // namespace bigmac::audit
