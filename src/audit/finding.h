#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "audit/setting_catalog.h"

namespace bigmac::audit {

/// The kinds of finding of issue 19, one code each (shown and in --json).
enum class FindingKind {
  kWrongLayer,       ///< a setting written in a layer other than its consumer's
  kConflict,         ///< written in several places of one run with different values
  kDerivedWritten,   ///< dp or the global batch written instead of derived
  kConstraint,       ///< a hard constraint broken by literal values
  kUnorderedLayers,  ///< blocks held in a dict or set
  kNoLayerId,        ///< blocks without a stable layer id
  kNoStage,          ///< an embedding or output head built on every stage
  kNoConfigPrint,    ///< no effective-configuration print after initialisation
};

/// "wrong-layer", "conflict", ...
std::string_view finding_code(FindingKind kind);

struct Finding {
  FindingKind kind;
  std::string file;
  int line = 0;
  std::optional<Setting> setting;
  std::string message;  ///< what is wrong, with the values and places involved
  std::string fix;      ///< what to do

  std::string where() const { return file + ":" + std::to_string(line); }
};

}  // namespace bigmac::audit
