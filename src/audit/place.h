#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "audit/setting_catalog.h"
#include "audit/setting_value.h"

namespace bigmac::audit {

/// What happens to a setting at a place.
enum class PlaceKind {
  kWrite,    ///< a value is given (literal, or resolved from a literal)
  kDerived,  ///< a value is computed from other values
  kRead,     ///< the value is read, or passed on without a value of its own
};

/// Where a written value comes from, in the order such values usually apply: a later source
/// overrides an earlier one (a default in code < a config file < an #SBATCH directive < the
/// environment < the launch script's command line < an assignment in code after loading).
enum class Source { kDefault, kConfigFile, kDirective, kEnvironment, kScript, kCode };

/// "default in code", "config file", ...
std::string_view source_name(Source source);

/// One place in the project where a parallel setting is written, derived or read.
struct Place {
  std::string file;  ///< as shown to the user (relative to where the audit ran)
  int line = 0;
  Setting setting = Setting::kWorldSize;
  PlaceKind kind = PlaceKind::kRead;
  Source source = Source::kDefault;
  config::Layer layer = config::Layer::kSchedule;  ///< the layer the place itself belongs to
  std::optional<SettingValue> value;               ///< for writes
  std::string spelling;                            ///< the name as written there
  std::string note;                                ///< "argparse default", "passes $PP on", ...

  /// A place with no value, spelling or note yet.
  static Place at(std::string file, int line, Setting setting, PlaceKind kind, Source source,
                  config::Layer layer) {
    Place p;
    p.file = std::move(file);
    p.line = line;
    p.setting = setting;
    p.kind = kind;
    p.source = source;
    p.layer = layer;
    return p;
  }

  bool literal_write() const { return kind == PlaceKind::kWrite && value && !value->means_unset(); }
  std::string where() const { return file + ":" + std::to_string(line); }
};

}  // namespace bigmac::audit
