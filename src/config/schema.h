#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace bigmac::config {

/// The most hosts and ranks per host: their product, the world size, stays far inside int.
inline constexpr std::int64_t kMaxNodes = std::int64_t{1} << 17;
inline constexpr std::int64_t kMaxProcsPerNode = std::int64_t{1} << 12;
inline constexpr std::int64_t kMaxWorldSize = kMaxNodes * kMaxProcsPerNode;

/// The configuration layers of docs/architecture.md §2, plus the trainer's own tables.
enum class Layer { kLaunch, kSchedule, kModel, kTrainer, kFaults, kTrace };

std::string_view layer_name(Layer layer);

enum class ValueType { kBool, kInt, kFloat, kString, kStringList, kSplitPoints };

std::string_view type_name(ValueType type);

/// One configuration key. The table of all keys is the single place that says which keys
/// exist, their type, their layer and their limits; default values come from the member
/// initialisers of the structs in config.h, read back through `get`.
struct SchemaEntry {
  std::string_view table;  ///< "train"
  std::string_view key;    ///< "micro_batch_size"
  Layer layer;
  ValueType type;
  std::string_view doc;
  std::optional<std::int64_t> min;        ///< smallest allowed number
  std::optional<std::int64_t> max;        ///< largest allowed number
  std::vector<std::string_view> choices;  ///< allowed strings, when an enumeration
  Value (*get)(const Config&);
  void (*set)(Config&, const Value&);
  bool above_min = false;  ///< the value must be more than `min`, not only at least it

  std::string full_key() const;  ///< "train.micro_batch_size"
  std::string env_name() const;  ///< "BIGMAC_TRAIN_MICRO_BATCH_SIZE"
};

/// Every key in display order: launch, schedule ([parallel], [train]), model, then trainer,
/// faults and trace.
std::span<const SchemaEntry> schema();

const SchemaEntry* find_entry(std::string_view table, std::string_view key);

/// The tables that hold plain keys, in display order.
std::span<const std::string_view> schema_tables();

/// Keys that are computed, never written: name -> how it is derived.
std::optional<std::string_view> derived_explanation(std::string_view key);

}  // namespace bigmac::config
