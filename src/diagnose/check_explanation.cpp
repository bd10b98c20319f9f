#include "diagnose/check_explanation.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace bigmac::diagnose {
namespace {

// Classes whose cause is in the numbers or the layout the ranks logged, not in a rank that
// ended: they explain only the checks listed for them below.
constexpr std::array<std::string_view, 18> kRecordClasses = {
    "lr_scaling",           "loss_divergence",     "loss_mismatch",       "batch_accounting",
    "gradient_sync",        "diverging_gradients", "no_gradient",         "step_sequence",
    "checkpoint_writers",   "parameter_partition", "pipeline_stage_idle", "layout_dependent_data",
    "settings_not_applied", "not_distributed",     "resumed_checkpoint",  "unseeded_model",
    "data_sharding",        "sample_coverage"};

bool ends_a_rank(std::string_view klass) {
  return std::find(kRecordClasses.begin(), kRecordClasses.end(), klass) == kRecordClasses.end() &&
         klass != "unexplained";
}

// Checks a rank that ended explains: they need what it would have written.
constexpr std::array<std::string_view, 13> kNeedsWholeRun = {
    "exit_status",      "process_group_formed",  "fields_present",   "step_sequence",
    "loss_vs_baseline", "grad_norm_vs_baseline", "lr_vs_baseline",   "schedule_order",
    "no_starved_stage", "no_idle_stage",         "samples_per_step", "param_count",
    "settings_applied"};

struct Explanation {
  std::string_view check;
  std::initializer_list<std::string_view> classes;
};

// The record classes (and the few rank-ending ones that say more) that explain each check.
const std::array<Explanation, 24>& table() {
  static const std::array<Explanation, 24> kTable = {{
      {"replicas_in_sync", {"gradient_sync", "not_distributed"}},
      {"no_duplicate_samples", {"data_sharding", "not_distributed"}},
      {"sample_coverage", {"sample_coverage", "data_sharding"}},
      {"fresh_start", {"resumed_checkpoint"}},
      {"process_group_formed", {"not_distributed"}},
      {"finite_loss",
       {"non_finite", "gradient_overflow", "loss_scale_underflow", "diverging_gradients",
        "lr_scaling", "mixed_precision_config"}},
      {"grad_norm_nonzero", {"no_gradient", "non_finite", "gradient_overflow"}},
      {"grad_norm_stable",
       {"diverging_gradients", "non_finite", "lr_scaling", "gradient_overflow"}},
      {"step_sequence", {"step_sequence", "resumed_checkpoint"}},
      {"samples_per_step", {"batch_accounting", "not_distributed"}},
      {"loss_vs_baseline",
       {"loss_divergence", "loss_mismatch", "lr_scaling", "batch_accounting", "gradient_sync",
        "diverging_gradients", "non_finite", "parameter_partition", "layout_dependent_data",
        "settings_not_applied", "not_distributed", "resumed_checkpoint", "unseeded_model",
        "sample_coverage"}},
      {"grad_norm_vs_baseline",
       {"gradient_sync", "loss_divergence", "loss_mismatch", "lr_scaling", "batch_accounting",
        "diverging_gradients", "non_finite", "parameter_partition", "layout_dependent_data",
        "settings_not_applied", "not_distributed"}},
      {"lr_vs_baseline", {"lr_scaling", "settings_not_applied"}},
      {"param_count", {"parameter_partition", "state_dict_mismatch", "pipeline_stage_idle"}},
      {"param_digest",
       {"parameter_partition", "state_dict_mismatch", "loss_mismatch", "unseeded_model",
        "gradient_sync"}},
      {"layer_coverage", {"pipeline_stage_idle", "parameter_partition", "parallel_layout"}},
      {"schedule_order", {"pipeline_stall", "pipeline_stage_idle"}},
      {"no_starved_stage", {"pipeline_stall", "pipeline_stage_idle"}},
      {"no_idle_stage", {"pipeline_stall", "pipeline_stage_idle"}},
      {"shape_chain", {"shape_mismatch"}},
      {"fixed_seq_length", {"shape_mismatch"}},
      {"labels_last_stage_only", {"shape_mismatch", "pipeline_loss_placement"}},
      {"no_middle_stage_loss", {"pipeline_loss_placement"}},
      {"single_checkpoint_writer", {"checkpoint_writers"}},
  }};
  return kTable;
}

}  // namespace

bool explains(std::string_view klass, std::string_view check, bool nothing_judged) {
  if (ends_a_rank(klass) &&
      (nothing_judged ||
       std::find(kNeedsWholeRun.begin(), kNeedsWholeRun.end(), check) != kNeedsWholeRun.end())) {
    return true;
  }
  for (const Explanation& e : table()) {
    if (e.check != check) continue;
    return std::find(e.classes.begin(), e.classes.end(), klass) != e.classes.end();
  }
  return false;
}

void explain_failed_checks(std::vector<Diagnosis>& diagnoses, std::span<const FailedCheck> failed,
                           const std::string& gate) {
  for (Diagnosis& d : diagnoses) {
    d.explains.clear();
    for (const FailedCheck& check : failed) {
      if (explains(d.klass, check.name, check.nothing_judged)) d.explains.push_back(check.name);
    }
  }
  for (const FailedCheck& check : failed) {
    const bool explained = std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) {
      return std::find(d.explains.begin(), d.explains.end(), check.name) != d.explains.end();
    });
    if (explained) continue;
    Diagnosis d;
    d.id = "no_known_cause";
    d.klass = "unexplained";
    d.symptom = fmt::format("check {} failed: {}", check.name, check.message);
    d.cause = fmt::format("no rule of the catalog explains why {} failed here", check.name);
    d.fix = fmt::format(
        "read the evidence of {} in verdict.json and the ranks' logs; `bigmac-bringup diagnose` "
        "on those logs may name more",
        check.name);
    d.gate = gate;
    d.confidence = 0;
    d.specificity = 0;
    d.explains = {check.name};
    diagnoses.push_back(std::move(d));
  }
}

}  // namespace bigmac::diagnose
