#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bigmac {

/// One key whose value differs between two maps: `before` empty for a key only `after` has,
/// `after` empty for one only `before` has.
struct MapChange {
  std::string key;
  std::optional<std::string> before;
  std::optional<std::string> after;
};

/// Every key whose value differs, changed and removed keys in `before`'s order, then added ones
/// in `after`'s; each caller words them (a gate's inputs, a resumed run's configuration).
std::vector<MapChange> map_changes(const std::map<std::string, std::string>& before,
                                   const std::map<std::string, std::string>& after);

}  // namespace bigmac
