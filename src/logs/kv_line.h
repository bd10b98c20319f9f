#pragma once

#include <string>
#include <string_view>

#include "logs/field_bag.h"

namespace bigmac::logs {

/// The marker that starts a key=value contract line; it may follow other text on the line
/// (a logger's own prefix).
inline constexpr std::string_view kKeyValueMarker = "BIGMAC ev=";

/// Reads `ev=step rank=0 loss=2.31 input_shape=[2,32] path="a b"` (the text after `BIGMAC `)
/// into the bag: bare tokens, double-quoted strings with `\"` and `\\` escapes, and bracketed
/// lists. False with `error` set on a token that is not key=value or an unclosed quote/list.
bool read_kv_line(std::string_view text, FieldBag& bag, std::string& error);

}  // namespace bigmac::logs
