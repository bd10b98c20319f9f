#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace bigmac::config {

/// Line and column (1-based) of a key or value in its source file.
struct DataPosition {
  int line = 0;
  int column = 0;
};

/// A TOML data file (gate specs in stages/, the diagnosis catalog) as a neutral JSON tree, with
/// the position of every key, so modules other than config/ read TOML data without toml++ and
/// still report `file:line:col` in their errors.
struct DataFile {
  std::string path;
  nlohmann::json root;
  /// Dotted key path -> position: "gates.single.tolerance", "signature[3].pattern".
  std::map<std::string, DataPosition> positions;

  /// An error of `kind` located at `key` (its line and column when known).
  Error error_at(std::string_view key, std::string message, std::string hint = {},
                 ErrorKind kind = ErrorKind::kConfig) const;
};

/// Parses TOML text; `path` is used in error messages only.
Expected<DataFile> parse_data_file(std::string_view text, std::string path);

/// Reads and parses a TOML file.
Expected<DataFile> load_data_file(const std::filesystem::path& path);

}  // namespace bigmac::config
