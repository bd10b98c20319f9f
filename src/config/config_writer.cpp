#include "config/config_writer.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "config/config_printer.h"
#include "config/schema.h"
#include "core/json_file.h"

namespace bigmac::config {
namespace {

std::string comment_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "# " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// JSON string escaping is valid in TOML basic strings and YAML double-quoted scalars alike.
std::string quoted(const std::string& s) { return json_text(nlohmann::json(s)); }

std::string scalar(const Value& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return quoted(*s);
  if (const auto* d = std::get_if<double>(&value)) {
    std::string text = fmt::format("{}", *d);
    // TOML needs a float to look like one, or it reads back as an integer.
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
    return text;
  }
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string out = "[";
    for (std::size_t i = 0; i < list->size(); ++i) out += (i ? ", " : "") + quoted((*list)[i]);
    return out + "]";
  }
  return value_to_string(value);
}

/// Effective values with auto split points written out, so a reader needs no derivation.
Value effective(const Config& config, const SchemaEntry& entry) {
  if (entry.type == ValueType::kSplitPoints) {
    return std::vector<std::int64_t>(config.model.split_points.begin(),
                                     config.model.split_points.end());
  }
  return entry.get(config);
}

}  // namespace

std::string to_toml(const Config& config, const std::string& header_comment) {
  std::string out = comment_lines(header_comment);
  std::string_view table;
  for (const SchemaEntry& entry : schema()) {
    if (entry.table != table) {
      table = entry.table;
      out += fmt::format("\n[{}]\n", table);
    }
    out += fmt::format("{} = {}\n", entry.key, scalar(effective(config, entry)));
  }
  if (!config.log_fields.empty()) {
    out += "\n[logs.fields]\n";
    for (const auto& [field, regex] : config.log_fields) {
      out += fmt::format("{} = {}\n", field, quoted(regex));
    }
  }
  return out;
}

std::string to_yaml(const Config& config, const std::string& header_comment) {
  std::string out = comment_lines(header_comment);
  std::string_view table;
  for (const SchemaEntry& entry : schema()) {
    // A sub-table ([launch.slurm]) follows its parent in the schema: nested one level deeper.
    const std::size_t dot = entry.table.find('.');
    const std::string_view indent = dot == std::string_view::npos ? "  " : "    ";
    if (entry.table != table) {
      table = entry.table;
      out += dot == std::string_view::npos ? fmt::format("{}:\n", table)
                                           : fmt::format("  {}:\n", table.substr(dot + 1));
    }
    out += fmt::format("{}{}: {}\n", indent, entry.key, scalar(effective(config, entry)));
  }
  out += "derived:\n";
  out += fmt::format("  world_size: {}\n  dp: {}\n  global_batch: {}\n  micro_batches: {}\n",
                     config.derived.world_size, config.derived.dp, config.derived.global_batch,
                     config.derived.micro_batches);
  return out;
}

}  // namespace bigmac::config
