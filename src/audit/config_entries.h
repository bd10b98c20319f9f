#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "audit/setting_value.h"
#include "core/error.h"

namespace bigmac::audit {

/// One scalar (or list of scalars) of a YAML, TOML or JSON file, with the keys leading to it
/// ("train", "micro_batch_size") and the line it is written on.
struct ConfigEntry {
  std::vector<std::string> keys;
  SettingValue value;
  int line = 0;
};

/// The entries of a YAML file, read with yaml-cpp; the error names the file, line and column.
Expected<std::vector<ConfigEntry>> yaml_entries(const std::string& text, const std::string& file);

/// The entries of a JSON file, read with nlohmann::json.
Expected<std::vector<ConfigEntry>> json_entries(const std::string& text, const std::string& file);

/// The entries of a TOML file, read through config/'s data_file.
Expected<std::vector<ConfigEntry>> toml_entries(const std::string& text, const std::string& file);

}  // namespace bigmac::audit
