#include "audit/finding.h"

namespace bigmac::audit {

std::string_view finding_code(FindingKind kind) {
  switch (kind) {
    case FindingKind::kWrongLayer:
      return "wrong-layer";
    case FindingKind::kConflict:
      return "conflict";
    case FindingKind::kDerivedWritten:
      return "derived-written";
    case FindingKind::kConstraint:
      return "constraint";
    case FindingKind::kUnorderedLayers:
      return "unordered-layers";
    case FindingKind::kNoLayerId:
      return "no-layer-id";
    case FindingKind::kNoStage:
      return "no-stage";
    case FindingKind::kNoConfigPrint:
      return "no-config-print";
  }
  return "?";
}

}  // namespace bigmac::audit
