#pragma once

#include <string>
#include <vector>

#include "logs/field_bag.h"
#include "logs/record.h"

namespace bigmac::logs {

/// How a contract line (JSON or key=value) turned out.
enum class ContractResult {
  kRecord,        ///< `out` holds the record
  kUnknownEvent,  ///< well formed, but `ev` names no v1 event (a newer trainer?)
  kBad,           ///< missing or wrongly typed field; `bag.error()` says which
};

/// Builds the record named by the bag's `ev` and appends it to `out` (only on kRecord).
/// `base` carries the line number and the prefix's rank and time; the line's own `rank` and `t`
/// take precedence.
ContractResult build_contract_record(FieldBag& bag, const RecordOrigin& base,
                                     std::vector<Record>& out);

}  // namespace bigmac::logs
