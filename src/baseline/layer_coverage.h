#pragma once

#include <map>
#include <optional>
#include <span>
#include <vector>

#include "baseline/logged.h"
#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::baseline {

// Whether the pipeline's stages cover the model's layers, each exactly once, judged once: the
// gate check `layer_coverage` (gates/pipeline_checks.cpp) and the diagnosis rule
// `stage_without_layers` (diagnose/pipeline_rules.cpp) both call it (issue 29).

/// A layout and the log it came from.
using LoggedLayout = Logged<logs::LayoutRecord>;

/// The first way the layouts fail to cover the layers, in the order the gate judges them.
struct LayerCoverage {
  enum class Kind {
    kCovered,             ///< every layer on exactly one stage
    kNoLayout,            ///< no rank logged a layout
    kReplicasDisagree,    ///< two replicas of a stage hold other layers: `a` and `b`
    kLayersUnknown,       ///< `a` logged its stage without its layer range
    kStageCount,          ///< the stages that logged a layout are not the planned ones
    kStageWithoutLayers,  ///< `a`'s stage holds no layer
    kLayerOutsideModel,   ///< `a` claims `layer`, past the model's last
    kLayerNotOnOneStage,  ///< `layer` is held by `owners`: none or several stages
  };
  Kind kind = Kind::kCovered;
  LoggedLayout a, b;
  int layer = -1;
  std::vector<int> missing;            ///< kStageCount: planned stages without a layout
  std::vector<int> owners;             ///< kLayerNotOnOneStage: the stages holding `layer`
  std::map<int, LoggedLayout> stages;  ///< the first layout logged of each stage
};

/// Whether a layout's stage holds no layer: no range, or an empty one.
bool owns_no_layer(const logs::LayoutRecord& layout);

/// The coverage of `num_layers` layers (nullopt: not known, the per-layer checks are skipped)
/// by `num_stages` planned stages, from every layout in log order.
LayerCoverage cover_layers(const std::vector<LoggedLayout>& layouts, std::optional<int> num_layers,
                           int num_stages);

/// The same from the ranks' logs: any span of logs::RankLog or of a type derived from it.
template <class Log>
LayerCoverage cover_layers(std::span<const Log> logs, std::optional<int> num_layers,
                           int num_stages) {
  std::vector<LoggedLayout> layouts;
  for (const Log& log : logs) {
    for (const logs::LayoutRecord& l : log.layouts) layouts.push_back({&l, &log});
  }
  return cover_layers(layouts, num_layers, num_stages);
}

}  // namespace bigmac::baseline
