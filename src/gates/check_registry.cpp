#include "gates/check_registry.h"

#include <algorithm>

#include "gates/baseline_checks.h"
#include "gates/pipeline_checks.h"
#include "gates/process_checks.h"
#include "gates/replica_checks.h"
#include "gates/settings_checks.h"
#include "gates/shape_checks.h"
#include "gates/step_checks.h"

namespace bigmac::gates {
namespace {

constexpr RegisteredCheck kChecks[] = {
    {"finite_loss", check_finite_loss},
    {"grad_norm_nonzero", check_grad_norm_nonzero},
    {"grad_norm_stable", check_grad_norm_stable},
    {"step_sequence", check_step_sequence},
    {"samples_per_step", check_samples_per_step},
    {"fields_present", check_fields_present},
    {"exit_status", check_exit_status},
    {"process_group_formed", check_process_group_formed},
    {"loss_vs_baseline", check_loss_vs_baseline},
    {"grad_norm_vs_baseline", check_grad_norm_vs_baseline},
    {"lr_vs_baseline", check_lr_vs_baseline},
    {"param_count", check_param_count},
    {"param_digest", check_param_digest},
    {"layer_coverage", check_layer_coverage},
    {"schedule_order", check_schedule_order},
    {"no_starved_stage", check_no_starved_stage},
    {"shape_chain", check_shape_chain},
    {"fixed_seq_length", check_fixed_seq_length},
    {"labels_last_stage_only", check_labels_last_stage_only},
    {"no_middle_stage_loss", check_no_middle_stage_loss},
    {"single_checkpoint_writer", check_single_checkpoint_writer},
    {"no_idle_stage", check_no_idle_stage},
    {"settings_applied", check_settings_applied},
    {"fresh_start", check_fresh_start},
    {"replicas_in_sync", check_replicas_in_sync},
    {"buffers_in_sync", check_buffers_in_sync},
    {"no_duplicate_samples", check_no_duplicate_samples},
    {"sample_coverage", check_sample_coverage},
};

}  // namespace

std::span<const RegisteredCheck> registered_checks() { return kChecks; }

CheckFunction find_check(std::string_view name) {
  auto it = std::find_if(std::begin(kChecks), std::end(kChecks),
                         [&](const RegisteredCheck& c) { return c.name == name; });
  return it == std::end(kChecks) ? nullptr : it->run;
}

}  // namespace bigmac::gates
