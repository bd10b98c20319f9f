#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.h"

namespace bigmac::audit {

/// The parallel settings the audit tracks (docs/architecture.md §2 and issue 19's list).
enum class Setting {
  kWorldSize,
  kNnodes,
  kNprocPerNode,
  kDevices,
  kMasterAddr,
  kMasterPort,
  kPpSize,
  kTpSize,
  kDp,
  kMicroBatchSize,
  kGradAccum,
  kGlobalBatch,
  kSeqLength,
  kSchedule,
  kMicroBatches,
  kNumLayers,
  kSplitPoints,
  kLayerIds,
  kTiedWeights,
};

/// One row of the catalog: the canonical name, the layer that consumes the setting, whether it
/// is derived (never to be written), and every usual spelling of it in launch scripts, config
/// files, argument parsers and environment variables.
struct SettingInfo {
  Setting setting;
  std::string_view name;  ///< canonical: "micro_batch_size"
  config::Layer layer;
  bool derived;
  std::vector<std::string_view> spellings;  ///< normalised (see normalise_name)
};

/// Every setting in display order (launch, schedule, model).
std::span<const SettingInfo> setting_catalog();

const SettingInfo& info(Setting setting);

/// "--micro-batch-size" -> "micro_batch_size", "MICRO_BATCH_SIZE" -> "micro_batch_size".
std::string normalise_name(std::string_view name);

/// The setting a name (flag, key, variable, field) spells, if any.
std::optional<Setting> find_setting(std::string_view name);

/// The layer a section, table or group name stands for ("training" -> schedule, "model" ->
/// model, "distributed" -> launch), if any.
std::optional<config::Layer> section_layer(std::string_view section);

}  // namespace bigmac::audit
