#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "logs/field_bag.h"

namespace bigmac::logs::testing {

/// Everything a FieldBag holds, as text that compares exactly: reals by their bits, so that the
/// flat reader and simdjson must agree to the last bit (and on the sign of zero).
inline std::string bag_text(FieldBag& bag) {
  std::string out;
  for (std::size_t k = 0; k < static_cast<std::size_t>(FieldKey::kCount); ++k) {
    auto key = static_cast<FieldKey>(k);
    const Slot& slot = bag.at(key);
    if (slot.kind == Slot::Kind::kAbsent) continue;
    out += std::string(key_name(key)) + "/" + std::to_string(static_cast<int>(slot.kind)) + "=";
    switch (slot.kind) {
      case Slot::Kind::kInt:
        out += std::to_string(slot.i);
        break;
      case Slot::Kind::kReal:
        out += std::to_string(std::bit_cast<std::uint64_t>(slot.d));
        break;
      case Slot::Kind::kString:
      case Slot::Kind::kText:
        out += slot.s;
        break;
      case Slot::Kind::kIntList: {
        std::vector<std::int64_t> list;
        bag.read(key, list);
        for (std::int64_t v : list) out += std::to_string(v) + ",";
        break;
      }
      case Slot::Kind::kStrList: {
        std::vector<std::string> list;
        bag.read(key, list);
        for (const std::string& v : list) out += v + ",";
        break;
      }
      default:
        break;
    }
    out += "; ";
  }
  return out;
}

}  // namespace bigmac::logs::testing
