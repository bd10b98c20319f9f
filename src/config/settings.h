#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"

namespace bigmac::config {

/// Where a value came from, lowest precedence first.
enum class SourceKind { kDefault, kFile, kEnv, kCommandLine, kDerived };

/// One place a value was set: `configs/demo.toml:12:1`, `$BIGMAC_TRAIN_SEED`, `--set`, default.
struct Origin {
  SourceKind kind = SourceKind::kDefault;
  std::string where;  ///< file path, variable name, or the --set text
  int line = 0;
  int column = 0;

  std::string describe() const;
};

/// Points `error` at `origin`: its file, line and column for a file, else the origin's
/// description (`--set ...`, `env ...`) in place of the file; nothing for a default.
void locate(Error& error, const Origin& origin);

/// A configuration value as read from TOML, the environment or the command line.
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                           std::vector<std::string>>;

std::string value_to_string(const Value& value);

struct Assignment {
  Value value;
  Origin origin;
};

/// The effective value of one key with every place that set it (precedence order; last wins).
struct Setting {
  std::string key;  ///< "train.micro_batch_size"
  Value value;
  Origin origin;                        ///< the winner
  std::vector<Assignment> assignments;  ///< default first, then file, env, --set
};

/// Settings in schema order (launch, schedule, model, then the rest), derived values last.
struct SettingTable {
  std::vector<Setting> entries;

  const Setting* find(std::string_view key) const;
};

}  // namespace bigmac::config
