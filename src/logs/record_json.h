#pragma once

#include <string>
#include <string_view>

#include "logs/record.h"

namespace bigmac::logs {

/// One record as a JSON line (no newline), for `parse --records`: `ev` (event_name), `file`,
/// `line`, `rank` and `t` of its origin, then its fields by their contract names, so a user sees
/// exactly what an adapter read. A step's `extra` numbers are an object by their names; an
/// absent optional field is left out; a non-finite number is the string `nan`, `inf` or `-inf`
/// (as the contract allows). A TextLine is written as `ev` `text` with its kept text.
std::string record_json_line(const Record& record, std::string_view file);

}  // namespace bigmac::logs
