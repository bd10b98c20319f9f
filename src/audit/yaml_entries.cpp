#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "audit/config_entries.h"

namespace bigmac::audit {
namespace {

// Aliases share their anchor's nodes, so a walk can visit far more values than the file holds:
// 342 bytes of aliases nested 9 deep, 9 wide ("billion laughs") are 9^9 values. No real
// configuration comes near this many.
constexpr std::size_t kMaxValues = 100'000;

// False (and `stop` the node where the walk stopped) once more than kMaxValues were visited.
bool walk(const YAML::Node& node, std::vector<std::string>& keys, int line,
          std::vector<ConfigEntry>& out, std::size_t& visited, YAML::Mark& stop) {
  if (++visited > kMaxValues) {
    stop = node.Mark();
    return false;
  }
  if (node.IsMap()) {
    for (const auto& item : node) {
      keys.push_back(item.first.Scalar());
      if (!walk(item.second, keys, item.first.Mark().line + 1, out, visited, stop)) return false;
      keys.pop_back();
    }
  } else if (node.IsSequence()) {
    bool scalars = true;
    std::string text = "[";
    for (std::size_t i = 0; i < node.size(); ++i) {
      scalars = scalars && node[i].IsScalar();
      if (scalars) text += (i ? ", " : "") + node[i].Scalar();
    }
    if (scalars && !keys.empty()) {
      out.push_back(ConfigEntry{keys, SettingValue::from_text(text + "]"), line});
      return true;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      keys.push_back("[" + std::to_string(i) + "]");
      if (!walk(node[i], keys, node[i].Mark().line + 1, out, visited, stop)) return false;
      keys.pop_back();
    }
  } else if (!keys.empty()) {
    out.push_back(
        ConfigEntry{keys, SettingValue::from_text(node.IsNull() ? "null" : node.Scalar()), line});
  }
  return true;
}

}  // namespace

Expected<std::vector<ConfigEntry>> yaml_entries(const std::string& text, const std::string& file) {
  std::vector<ConfigEntry> out;
  std::size_t visited = 0;
  YAML::Mark stop = YAML::Mark::null_mark();
  try {
    for (const YAML::Node& document : YAML::LoadAll(text)) {
      std::vector<std::string> keys;
      if (walk(document, keys, 0, out, visited, stop)) continue;
      Error error = make_error(
          ErrorKind::kInput,
          fmt::format("YAML: its aliases expand to more than {} values (aliases of aliases, a "
                      "\"billion laughs\" file?)",
                      kMaxValues),
          "no configuration needs this many: expand the aliases by hand, or leave the file out");
      error.file = file;
      error.line = stop.is_null() ? 0 : stop.line + 1;
      error.column = stop.is_null() ? 0 : stop.column + 1;
      return tl::unexpected(error);
    }
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports malformed input by exception; it becomes an input error here.
    Error error = make_error(ErrorKind::kInput, "YAML: " + e.msg, "fix the YAML syntax there");
    error.file = file;
    error.line = e.mark.is_null() ? 0 : e.mark.line + 1;
    error.column = e.mark.is_null() ? 0 : e.mark.column + 1;
    return tl::unexpected(error);
  }
  return out;
}

}  // namespace bigmac::audit
