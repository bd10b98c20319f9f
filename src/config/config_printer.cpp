#include "config/config_printer.h"

#include <fmt/format.h>

#include "config/schema.h"

namespace bigmac::config {
namespace {

struct Section {
  std::string heading;  // layer comment, empty when it continues the previous layer
  std::string table;
};

std::vector<Section> sections() {
  return {{"launch layer", "launch"},  {"schedule layer", "parallel"}, {"", "train"},
          {"model layer", "model"},    {"trainer", "trainer"},         {"faults", "faults"},
          {"trace", "trace"},          {"derived (never written)", "derived"}};
}

std::string_view table_of(const Setting& s) {
  return std::string_view(s.key).substr(0, s.key.find('.'));
}

std::string_view name_of(const Setting& s) {
  return std::string_view(s.key).substr(s.key.find('.') + 1);
}

void print_setting(std::string& out, std::string_view name, const Setting& s,
                   const PrintOptions& options) {
  const std::string value = value_to_string(s.value);
  if (!options.provenance) {
    out += fmt::format("{} = {}\n", name, value);
    return;
  }
  out += fmt::format("{:<38} # {}\n", fmt::format("{} = {}", name, value), s.origin.describe());
  if (s.assignments.size() <= 1) return;
  for (auto it = s.assignments.rbegin(); it != s.assignments.rend(); ++it) {
    const bool winner = it == s.assignments.rbegin();
    out += fmt::format("    {} {:<36} = {}{}\n", winner ? "*" : " ", it->origin.describe(),
                       value_to_string(it->value), winner ? "   (wins)" : "");
  }
}

nlohmann::json setting_json(const Setting& s, const PrintOptions& options) {
  if (!options.provenance) return value_to_json(s.value);
  nlohmann::json assignments = nlohmann::json::array();
  for (const Assignment& a : s.assignments) {
    assignments.push_back({{"value", value_to_json(a.value)}, {"source", a.origin.describe()}});
  }
  return {{"value", value_to_json(s.value)},
          {"source", s.origin.describe()},
          {"assignments", assignments}};
}

}  // namespace

nlohmann::json value_to_json(const Value& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

std::string format_config(const Config& config, const PrintOptions& options) {
  std::string out;
  for (const Section& section : sections()) {
    if (!section.heading.empty()) out += fmt::format("{}# {}\n", out.empty() ? "" : "\n", section.heading);
    out += fmt::format("[{}]\n", section.table);
    for (const Setting& s : config.settings.entries) {
      if (table_of(s) == section.table) print_setting(out, name_of(s), s, options);
    }
  }
  if (!config.trainer_env.empty()) {
    out += "\n[trainer.env]\n";
    for (const auto& [name, setting] : config.trainer_env) {
      print_setting(out, name, setting, options);
    }
  }
  if (!config.log_fields.empty()) {
    out += "\n[logs.fields]\n";
    for (const auto& [field, regex] : config.log_fields) {
      out += fmt::format("{} = '{}'\n", field, regex);
    }
  }
  for (const auto& [gate, overrides] : config.gate_overrides) {
    out += fmt::format("\n[gates.{}]\n", gate);
    for (const auto& [key, setting] : overrides) print_setting(out, key, setting, options);
  }
  return out;
}

nlohmann::json config_to_json(const Config& config, const PrintOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const Setting& s : config.settings.entries) {
    out[std::string(table_of(s))][std::string(name_of(s))] = setting_json(s, options);
  }
  for (const auto& [name, setting] : config.trainer_env) {
    out["trainer"]["env"][name] = setting_json(setting, options);
  }
  out["logs"]["fields"] = config.log_fields;
  out["gates"] = nlohmann::json::object();
  for (const auto& [gate, overrides] : config.gate_overrides) {
    for (const auto& [key, setting] : overrides) {
      out["gates"][gate][key] = setting_json(setting, options);
    }
  }
  return out;
}

}  // namespace bigmac::config
