#include "baseline/layer_coverage.h"

#include <algorithm>
#include <cstddef>

namespace bigmac::baseline {

bool owns_no_layer(const logs::LayoutRecord& layout) {
  return layout.first_layer < 0 || layout.last_layer < layout.first_layer;
}

LayerCoverage cover_layers(const std::vector<LoggedLayout>& layouts, std::optional<int> num_layers,
                           int num_stages) {
  using Kind = LayerCoverage::Kind;
  LayerCoverage out;
  for (const LoggedLayout& l : layouts) {
    const auto [it, fresh] = out.stages.emplace(l.record->stage, l);
    const logs::LayoutRecord& first = *it->second.record;
    if (!fresh &&
        (first.first_layer != l.record->first_layer || first.last_layer != l.record->last_layer)) {
      out.kind = Kind::kReplicasDisagree;
      out.a = it->second;
      out.b = l;
      return out;
    }
  }
  if (out.stages.empty()) {
    out.kind = Kind::kNoLayout;
    return out;
  }
  // The probe logged the stage but could not read its layers: no range is judged on a guess.
  for (const auto& [stage, l] : out.stages) {
    if (!l.record->layers_unknown.empty()) {
      out.kind = Kind::kLayersUnknown;
      out.a = l;
      return out;
    }
  }
  for (int s = 0; s < num_stages; ++s) {
    if (!out.stages.count(s)) out.missing.push_back(s);
  }
  if (!out.missing.empty() || static_cast<int>(out.stages.size()) != num_stages) {
    out.kind = Kind::kStageCount;
    return out;
  }
  const int layers = num_layers.value_or(0);
  std::vector<std::vector<int>> owners(static_cast<std::size_t>(std::max(layers, 0)));
  for (const auto& [stage, l] : out.stages) {
    if (owns_no_layer(*l.record)) {
      out.kind = Kind::kStageWithoutLayers;
      out.a = l;
      return out;
    }
    if (!num_layers) continue;
    for (int layer = l.record->first_layer; layer <= l.record->last_layer; ++layer) {
      if (layer >= layers) {
        out.kind = Kind::kLayerOutsideModel;
        out.a = l;
        out.layer = layer;
        return out;
      }
      owners[static_cast<std::size_t>(layer)].push_back(stage);
    }
  }
  for (int layer = 0; layer < layers; ++layer) {
    const auto& o = owners[static_cast<std::size_t>(layer)];
    if (o.size() != 1) {
      out.kind = Kind::kLayerNotOnOneStage;
      out.layer = layer;
      out.owners = o;
      return out;
    }
  }
  return out;
}

}  // namespace bigmac::baseline
