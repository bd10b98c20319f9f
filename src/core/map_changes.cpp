#include "core/map_changes.h"

namespace bigmac {

std::vector<MapChange> map_changes(const std::map<std::string, std::string>& before,
                                   const std::map<std::string, std::string>& after) {
  std::vector<MapChange> out;
  for (const auto& [key, value] : before) {
    auto it = after.find(key);
    if (it == after.end()) {
      out.push_back({key, value, std::nullopt});
    } else if (it->second != value) {
      out.push_back({key, value, it->second});
    }
  }
  for (const auto& [key, value] : after) {
    if (!before.contains(key)) out.push_back({key, std::nullopt, value});
  }
  return out;
}

}  // namespace bigmac
