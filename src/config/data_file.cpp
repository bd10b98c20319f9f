#include "config/data_file.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include "config/toml_source.h"
#include "core/atomic_file.h"

namespace bigmac::config {
namespace {

nlohmann::json to_json(const toml::node& node, const std::string& path,
                       std::map<std::string, DataPosition>& positions) {
  positions[path] = DataPosition{static_cast<int>(node.source().begin.line),
                                 static_cast<int>(node.source().begin.column)};
  if (const toml::table* table = node.as_table()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, child] : *table) {
      std::string child_path = path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
      out[std::string(key.str())] = to_json(child, child_path, positions);
    }
    return out;
  }
  if (const toml::array* array = node.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < array->size(); ++i) {
      out.push_back(to_json(*array->get(i), fmt::format("{}[{}]", path, i), positions));
    }
    return out;
  }
  if (auto v = node.value_exact<std::int64_t>()) return *v;
  if (auto v = node.value_exact<double>()) return *v;
  if (auto v = node.value_exact<bool>()) return *v;
  if (auto v = node.value_exact<std::string>()) return *v;
  // Dates and times have no JSON type; keep their TOML spelling.
  return toml_value_text(node);
}

}  // namespace

Error DataFile::error_at(std::string_view key, std::string message, std::string hint,
                         ErrorKind kind) const {
  Error e = make_error(kind, std::move(message), std::move(hint));
  e.file = path;
  e.key = std::string(key);
  if (auto it = positions.find(std::string(key)); it != positions.end()) {
    e.line = it->second.line;
    e.column = it->second.column;
  }
  return e;
}

Expected<DataFile> parse_data_file(std::string_view text, std::string path) {
  auto table = parse_toml_text(text, path);
  if (!table) return tl::unexpected(table.error());
  DataFile file;
  file.path = std::move(path);
  file.root = to_json(*table, "", file.positions);
  file.positions.erase("");
  return file;
}

Expected<DataFile> load_data_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return tl::unexpected(text.error());
  return parse_data_file(*text, path.string());
}

}  // namespace bigmac::config
