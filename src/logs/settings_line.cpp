#include "logs/settings_line.h"

#include <array>
#include <optional>
#include <utility>

#include "core/trim.h"
#include "logs/metric_alias.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

using SettingMember = std::optional<std::int64_t> SettingsRecord::*;

// Every spelling of each integer setting, folded.
struct SettingAlias {
  std::string_view name;
  SettingMember slot;
};
constexpr std::array<SettingAlias, 30> kSettings{{
    {"world_size", &SettingsRecord::world_size},
    {"world", &SettingsRecord::world_size},
    {"ws", &SettingsRecord::world_size},
    {"pp", &SettingsRecord::pp},
    {"pp_size", &SettingsRecord::pp},
    {"pipeline_parallel_size", &SettingsRecord::pp},
    {"pipeline_model_parallel_size", &SettingsRecord::pp},
    {"tp", &SettingsRecord::tp},
    {"tp_size", &SettingsRecord::tp},
    {"tensor_parallel_size", &SettingsRecord::tp},
    {"tensor_model_parallel_size", &SettingsRecord::tp},
    {"dp", &SettingsRecord::dp},
    {"dp_size", &SettingsRecord::dp},
    {"data_parallel_size", &SettingsRecord::dp},
    {"micro_bs", &SettingsRecord::micro_batch_size},
    {"micro_batch_size", &SettingsRecord::micro_batch_size},
    {"mbs", &SettingsRecord::micro_batch_size},
    {"accum", &SettingsRecord::grad_accum},
    {"grad_accum", &SettingsRecord::grad_accum},
    {"gradient_accumulation_steps", &SettingsRecord::grad_accum},
    {"global_bs", &SettingsRecord::global_batch},
    {"global_batch", &SettingsRecord::global_batch},
    {"global_batch_size", &SettingsRecord::global_batch},
    {"gbs", &SettingsRecord::global_batch},
    {"seq_len", &SettingsRecord::seq_length},
    {"seq_length", &SettingsRecord::seq_length},
    {"sequence_length", &SettingsRecord::seq_length},
    {"seed", &SettingsRecord::seed},
    {"max_steps", &SettingsRecord::max_steps},
    {"max_iters", &SettingsRecord::max_steps},
}};

std::optional<std::vector<std::int64_t>> integer_list(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  text = trim(text.substr(1, text.size() - 2));
  std::vector<std::int64_t> values;
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    auto value = parse_integer(text.substr(0, comma));
    if (!value) return std::nullopt;
    values.push_back(*value);
    text = comma == std::string_view::npos ? std::string_view{} : trim(text.substr(comma + 1));
  }
  return values;
}

}  // namespace

LineMatch read_settings_line(std::string_view text, SettingsRecord& out, std::string& error) {
  text = trim(text);
  if (!text.starts_with(kSettingsMarker)) return LineMatch::kNotMine;
  out = SettingsRecord{};
  std::size_t i = kSettingsMarker.size();
  while (true) {
    while (i < text.size() && is_blank(text[i])) ++i;
    if (i >= text.size()) return LineMatch::kRecord;
    const std::size_t start = i;
    while (i < text.size() && text[i] != '=' && !is_blank(text[i])) ++i;
    std::string_view name = text.substr(start, i - start);
    if (i >= text.size() || text[i] != '=' || name.empty()) {
      error = "[cfg]: expected key=value, got '" + std::string(name.substr(0, 40)) + "'";
      return LineMatch::kBad;
    }
    const std::size_t value_start = ++i;
    if (i < text.size() && text[i] == '[') {
      i = text.find(']', i);
      if (i == std::string_view::npos) {
        error = "[cfg]: unclosed list in " + std::string(name);
        return LineMatch::kBad;
      }
      ++i;
    } else {
      while (i < text.size() && !is_blank(text[i])) ++i;
    }
    std::string_view value = text.substr(value_start, i - value_start);
    const std::string key = fold_metric_name(name);
    if (key == "split_points" || key == "splits") {
      if (auto points = integer_list(value)) {
        out.split_points = std::move(*points);
        continue;
      }
      if (value != "auto") {
        error = "[cfg]: " + std::string(name) + "=" + std::string(value.substr(0, 40)) +
                " is not a list of integers";
        return LineMatch::kBad;
      }
    }
    const SettingAlias* known = nullptr;
    for (const SettingAlias& setting : kSettings) {
      if (setting.name == key) known = &setting;
    }
    if (known == nullptr) {
      out.other.emplace_back(std::string(name), std::string(value));
      continue;
    }
    auto number = parse_integer(value);
    if (!number) {
      error = "[cfg]: " + std::string(name) + "=" + std::string(value.substr(0, 40)) +
              " is not an integer";
      return LineMatch::kBad;
    }
    out.*(known->slot) = *number;
  }
}

}  // namespace bigmac::logs
