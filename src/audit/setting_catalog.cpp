#include "audit/setting_catalog.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace bigmac::audit {
namespace {

using config::Layer;

// The alias table: the one place that says which spellings mean which setting. Spellings are
// normalised (lower case, '-' as '_', no leading dashes), so "--micro-batch-size",
// "MICRO_BATCH_SIZE" and "micro_batch_size" are one entry.
const std::vector<SettingInfo>& table() {
  static const std::vector<SettingInfo> rows = {
      {Setting::kWorldSize,
       "world_size",
       Layer::kLaunch,
       false,
       {"world_size", "num_processes", "n_procs"}},
      {Setting::kNnodes,
       "nnodes",
       Layer::kLaunch,
       false,
       {"nnodes", "num_nodes", "n_nodes", "nodes", "num_machines", "slurm_nnodes",
        "slurm_job_num_nodes"}},
      {Setting::kNprocPerNode,
       "nproc_per_node",
       Layer::kLaunch,
       false,
       {"nproc_per_node", "gpus_per_node", "ngpu", "ngpus", "num_gpus", "n_gpus", "ntasks_per_node",
        "local_world_size", "slurm_ntasks_per_node", "slurm_gpus_on_node", "nproc"}},
      {Setting::kDevices,
       "devices",
       Layer::kLaunch,
       false,
       {"devices", "num_devices", "device_count", "n_devices", "cuda_visible_devices", "gpus"}},
      {Setting::kMasterAddr,
       "master_addr",
       Layer::kLaunch,
       false,
       {"master_addr", "master_address", "rdzv_endpoint"}},
      {Setting::kMasterPort, "master_port", Layer::kLaunch, false, {"master_port"}},
      {Setting::kPpSize,
       "pp_size",
       Layer::kSchedule,
       false,
       {"pp_size", "pp", "pipeline_model_parallel_size", "pipeline_parallel_size",
        "pipeline_parallel_degree", "pp_degree", "pipeline_parallel", "num_pipeline_stages"}},
      {Setting::kTpSize,
       "tp_size",
       Layer::kSchedule,
       false,
       {"tp_size", "tp", "tensor_model_parallel_size", "tensor_parallel_size",
        "tensor_parallel_degree", "tp_degree"}},
      {Setting::kDp,
       "dp",
       Layer::kSchedule,
       true,
       {"dp", "dp_size", "data_parallel_size", "data_parallel_degree", "dp_degree",
        "data_parallel_shard_degree"}},
      {Setting::kMicroBatchSize,
       "micro_batch_size",
       Layer::kSchedule,
       false,
       {"micro_batch_size", "micro_bs", "mbs", "micro_batch", "per_device_train_batch_size",
        "train_micro_batch_size_per_gpu", "local_batch_size"}},
      {Setting::kGradAccum,
       "gradient_accumulation_steps",
       Layer::kSchedule,
       false,
       {"gradient_accumulation_steps", "grad_accum", "accum", "grad_accum_steps",
        "gradient_accumulation", "accumulation_steps", "accum_steps", "grad_acc"}},
      {Setting::kGlobalBatch,
       "global_batch",
       Layer::kSchedule,
       true,
       {"global_batch", "global_batch_size", "gbs", "train_batch_size", "total_batch_size"}},
      {Setting::kSeqLength,
       "seq_length",
       Layer::kSchedule,
       false,
       {"seq_length", "seq_len", "max_seq_len", "max_seq_length", "sequence_length", "block_size"}},
      {Setting::kSchedule,
       "schedule",
       Layer::kSchedule,
       false,
       {"schedule", "pipeline_schedule", "pipeline_parallel_schedule", "pp_schedule"}},
      {Setting::kMicroBatches,
       "micro_batches",
       Layer::kSchedule,
       false,
       {"micro_batches", "num_micro_batches", "num_microbatches", "n_microbatches", "chunks",
        "pipeline_parallel_microbatches"}},
      {Setting::kNumLayers,
       "num_layers",
       Layer::kModel,
       false,
       {"num_layers", "n_layers", "num_hidden_layers", "n_layer", "nlayers"}},
      {Setting::kSplitPoints,
       "split_points",
       Layer::kModel,
       false,
       {"split_points", "split_point", "pipeline_parallel_split_points", "pp_split_points"}},
      {Setting::kLayerIds, "layer_ids", Layer::kModel, false, {}},
      {Setting::kTiedWeights,
       "tied_weights",
       Layer::kModel,
       false,
       {"tie_embeddings", "tie_word_embeddings", "tied_embeddings",
        "share_embeddings_and_output_weights", "untie_embeddings_and_output_weights",
        "weight_tying"}},
  };
  return rows;
}

// Section, table and group names and the layer they stand for; matched as whole words of the
// normalised name ("training_args" -> "training").
const std::map<std::string_view, Layer>& sections() {
  static const std::map<std::string_view, Layer> words = {
      {"launch", Layer::kLaunch},      {"launcher", Layer::kLaunch},
      {"distributed", Layer::kLaunch}, {"dist", Layer::kLaunch},
      {"slurm", Layer::kLaunch},       {"torchrun", Layer::kLaunch},
      {"cluster", Layer::kLaunch},     {"resources", Layer::kLaunch},
      {"parallel", Layer::kSchedule},  {"parallelism", Layer::kSchedule},
      {"train", Layer::kSchedule},     {"training", Layer::kSchedule},
      {"optim", Layer::kSchedule},     {"optimizer", Layer::kSchedule},
      {"data", Layer::kSchedule},      {"schedule", Layer::kSchedule},
      {"trainer", Layer::kSchedule},   {"pipeline", Layer::kSchedule},
      {"model", Layer::kModel},        {"arch", Layer::kModel},
      {"architecture", Layer::kModel}, {"network", Layer::kModel},
  };
  return words;
}

}  // namespace

std::span<const SettingInfo> setting_catalog() { return table(); }

const SettingInfo& info(Setting setting) { return table()[static_cast<std::size_t>(setting)]; }

std::string normalise_name(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::optional<Setting> find_setting(std::string_view name) {
  static const std::map<std::string, Setting, std::less<>> by_spelling = [] {
    std::map<std::string, Setting, std::less<>> out;
    for (const SettingInfo& row : table()) {
      out.emplace(std::string(row.name), row.setting);
      for (std::string_view s : row.spellings) out.emplace(std::string(s), row.setting);
    }
    return out;
  }();
  std::string key = normalise_name(name);
  auto it = by_spelling.find(key);
  if (it == by_spelling.end() && key.find('.') != std::string::npos) {
    it = by_spelling.find(key.substr(key.rfind('.') + 1));  // --training.local_batch_size
  }
  if (it == by_spelling.end()) return std::nullopt;
  return it->second;
}

std::optional<config::Layer> section_layer(std::string_view section) {
  // CamelCase class names count as words too: "TrainingArguments" -> "training_arguments".
  std::string split;
  for (std::size_t i = 0; i < section.size(); ++i) {
    const auto c = static_cast<unsigned char>(section[i]);
    if (i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(section[i - 1]))) {
      split.push_back('_');
    }
    split.push_back(section[i]);
  }
  const std::string name = normalise_name(split);
  // The last word that names a layer decides: "model_parallel" is about parallelism,
  // "language_model" about the model, "training_args" about training.
  std::size_t end = name.size();
  while (true) {
    const std::size_t cut = name.find_last_of("_ .", end == 0 ? 0 : end - 1);
    const std::size_t start = cut == std::string::npos || end == 0 ? 0 : cut + 1;
    auto it = sections().find(std::string_view(name).substr(start, end - start));
    if (it != sections().end()) return it->second;
    if (start == 0) break;
    end = start - 1;
  }
  return std::nullopt;
}

}  // namespace bigmac::audit
