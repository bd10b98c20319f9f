#include <yaml-cpp/yaml.h>

#include "audit/config_entries.h"

namespace bigmac::audit {
namespace {

void walk(const YAML::Node& node, std::vector<std::string>& keys, int line,
          std::vector<ConfigEntry>& out) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      keys.push_back(item.first.Scalar());
      walk(item.second, keys, item.first.Mark().line + 1, out);
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
      return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      keys.push_back("[" + std::to_string(i) + "]");
      walk(node[i], keys, node[i].Mark().line + 1, out);
      keys.pop_back();
    }
  } else if (!keys.empty()) {
    out.push_back(
        ConfigEntry{keys, SettingValue::from_text(node.IsNull() ? "null" : node.Scalar()), line});
  }
}

}  // namespace

Expected<std::vector<ConfigEntry>> yaml_entries(const std::string& text, const std::string& file) {
  std::vector<ConfigEntry> out;
  try {
    for (const YAML::Node& document : YAML::LoadAll(text)) {
      std::vector<std::string> keys;
      walk(document, keys, 0, out);
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
