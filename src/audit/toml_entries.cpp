#include "audit/config_entries.h"
#include "config/data_file.h"
#include "core/json_file.h"

namespace bigmac::audit {
namespace {

void walk(const nlohmann::json& node, const std::string& path, std::vector<std::string>& keys,
          const config::DataFile& data, std::vector<ConfigEntry>& out) {
  auto line_of = [&](const std::string& p) {
    auto it = data.positions.find(p);
    return it == data.positions.end() ? 0 : it->second.line;
  };
  if (node.is_object()) {
    for (const auto& [key, child] : node.items()) {
      keys.push_back(key);
      walk(child, path.empty() ? key : path + "." + key, keys, data, out);
      keys.pop_back();
    }
    return;
  }
  if (node.is_array()) {
    bool scalars = true;
    std::string text = "[";
    for (std::size_t i = 0; i < node.size(); ++i) {
      scalars = scalars && node[i].is_primitive();
      if (scalars)
        text += (i ? ", " : "") +
                (node[i].is_string() ? node[i].get<std::string>() : json_text(node[i]));
    }
    if (scalars) {
      out.push_back(ConfigEntry{keys, SettingValue::from_text(text + "]"), line_of(path)});
      return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      keys.push_back("[" + std::to_string(i) + "]");
      walk(node[i], path + "[" + std::to_string(i) + "]", keys, data, out);
      keys.pop_back();
    }
    return;
  }
  out.push_back(ConfigEntry{
      keys, SettingValue::from_text(node.is_string() ? node.get<std::string>() : json_text(node)),
      line_of(path)});
}

}  // namespace

Expected<std::vector<ConfigEntry>> toml_entries(const std::string& text, const std::string& file) {
  auto data = config::parse_data_file(text, file);
  if (!data) return tl::unexpected(data.error());
  std::vector<ConfigEntry> out;
  std::vector<std::string> keys;
  walk(data->root, "", keys, *data, out);
  return out;
}

}  // namespace bigmac::audit
