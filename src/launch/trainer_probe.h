#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "config/config.h"
#include "core/error.h"

namespace bigmac::launch {

/// Each rank's probe log in its attempt folder; `{rank}` is expanded by the probe itself
/// (docs/probe.md, BIGMAC_PROBE_LOG).
inline constexpr const char* kProbeLogPattern = "probe-rank{rank}.jsonl";

/// The folder holding the probe package and its sitecustomize.py: `<program dir>/../share/
/// bigmac-bringup/probe` (an install), else the source tree's probe/. An error (infrastructure)
/// names both places when neither has it.
Expected<std::filesystem::path> probe_package_dir();

/// What every rank's environment gets besides the BIGMAC_* values: PYTHONUNBUFFERED=1 (a
/// Python trainer's stdout is block-buffered in a pipe, and lines still buffered when a rank
/// is killed are lost), the probe's variables when `[trainer] probe` is on (`probe_dir` first
/// on PYTHONPATH, BIGMAC_PROBE_LOG in `attempt_dir`, BIGMAC_PROBE_MAX_STEPS the gate's
/// train.max_steps: the step bound), then `[trainer.env]`, whose values win, with the gate's
/// `placeholders` filled in as in the command (`PL_TRAINER_DEVICES = "{nproc_per_node}"`:
/// docs/frameworks.md). `inherited_pythonpath` is the orchestrator's PYTHONPATH, kept after
/// the probe.
std::map<std::string, std::string> trainer_environment(
    const config::Config& config, const std::filesystem::path& attempt_dir,
    const std::filesystem::path& probe_dir, const std::string& inherited_pythonpath,
    const std::map<std::string, std::string>& placeholders = {});

}  // namespace bigmac::launch
