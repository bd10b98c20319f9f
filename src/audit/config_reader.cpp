#include "audit/config_reader.h"

#include <filesystem>

#include "audit/config_entries.h"
#include "config/schema.h"

namespace bigmac::audit {
namespace {

config::Layer file_layer(const std::string& file, const std::vector<ConfigEntry>& entries) {
  const std::string stem = std::filesystem::path(file).stem().string();
  if (stem.find("model") != std::string::npos) return config::Layer::kModel;
  for (const ConfigEntry& e : entries) {
    if (e.keys.size() == 1 && (e.keys[0] == "model_type" || e.keys[0] == "architectures")) {
      return config::Layer::kModel;
    }
  }
  return config::Layer::kSchedule;
}

std::string dotted(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) {
    if (!out.empty() && !k.starts_with("[")) out += ".";
    out += k;
  }
  return out;
}

}  // namespace

Expected<void> read_config_file(const std::string& text, const std::string& file,
                                ProjectFacts& facts) {
  const std::string ext = std::filesystem::path(file).extension().string();
  auto entries = ext == ".toml"   ? toml_entries(text, file)
                 : ext == ".json" ? json_entries(text, file)
                                  : yaml_entries(text, file);
  if (!entries) return tl::unexpected(entries.error());
  const config::Layer default_layer = file_layer(file, *entries);
  for (const ConfigEntry& e : *entries) {
    if (e.keys.empty()) continue;
    const auto setting = find_setting(e.keys.back());
    if (!setting) continue;
    // A key of this tool's own configuration means what its schema says: [launch.slurm]
    // gpus_per_node is srun's --gpus-per-node, not a spelling of nproc_per_node.
    if (e.keys.size() >= 2 && e.keys.back() != info(*setting).name) {
      std::string table = e.keys.front();
      for (std::size_t i = 1; i + 1 < e.keys.size(); ++i) table += "." + e.keys[i];
      if (config::find_entry(table, e.keys.back()) != nullptr) continue;
    }
    config::Layer layer = default_layer;
    for (std::size_t i = e.keys.size() - 1; i-- > 0;) {
      if (auto l = section_layer(e.keys[i])) {
        layer = *l;
        break;
      }
    }
    Place p = Place::at(file, e.line, *setting, PlaceKind::kWrite, Source::kConfigFile, layer);
    p.value = e.value;
    p.spelling = dotted(e.keys);
    if (e.value.text == "null" || e.value.text == "~") {
      p.kind = PlaceKind::kRead;
      p.value.reset();
      p.note = "left empty (null)";
    }
    facts.places.push_back(std::move(p));
  }
  return {};
}

}  // namespace bigmac::audit
