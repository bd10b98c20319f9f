#pragma once

#include <map>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/schema.h"
#include "config/toml_source.h"

namespace bigmac::config {

/// Collects assignments from each source in precedence order (default < file < env < --set)
/// and the errors found on the way; `finish` turns them into the effective Config.
class Layering {
 public:
  Layering();

  void read_file(const std::string& path);
  void read_env(const std::map<std::string, std::string>& env);
  void read_override(std::string_view assignment);

  /// Effective values, derived values and constraint checks; all errors at once.
  tl::expected<Config, Errors> finish() &&;

 private:
  /// The keys of schema table `name` (and of its sub-tables, [launch.slurm]) from `node`.
  void read_table(const std::string& path, const std::string& name, const toml::node& node,
                  const Origin& at);
  /// `[trainer.env]`: NAME = "value" pairs for the ranks' environment.
  void read_trainer_env(const std::string& path, const toml::node& node, const Origin& at);
  void assign_env(const std::string& name, std::string value, Origin origin);
  void assign(const SchemaEntry& entry, Value value, Origin origin);
  /// Whether a string in `value` holds a NUL or invalid UTF-8 (an error is added, naming `key`):
  /// a rank is handed strings through argv and its environment, which cannot carry them.
  bool refuse_flawed(const std::string& key, const Value& value, const Origin& origin);
  void add_error(Error e) { errors_.push_back(std::move(e)); }
  Error located(std::string key, std::string message, const Origin& origin, std::string hint,
                ErrorKind kind = ErrorKind::kConfig) const;

  Config config_;
  std::map<std::string, Setting> settings_;  // by full key; display order comes from schema()
  Errors errors_;
};

/// Error positioned at the place the winning value of `key` came from.
Error error_at_setting(const SettingTable& table, std::string_view key, std::string message,
                       std::string hint = {});

}  // namespace bigmac::config
