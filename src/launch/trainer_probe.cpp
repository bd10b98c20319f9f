#include "launch/trainer_probe.h"

#include <fmt/format.h>

#include <algorithm>

#include "launch/launch_planner.h"

namespace bigmac::launch {
namespace fs = std::filesystem;

Expected<fs::path> probe_package_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = self.parent_path() / ".." / "share" / "bigmac-bringup" / "probe";
  for (const fs::path& dir : {installed, fs::path(BIGMAC_PROBE_DIR)}) {
    if (fs::is_regular_file(dir / "sitecustomize.py", ec)) return dir.lexically_normal();
  }
  return tl::unexpected(
      make_error(ErrorKind::kInfrastructure,
                 fmt::format("the probe package is missing (no sitecustomize.py in {} nor in {})",
                             installed.lexically_normal().string(), BIGMAC_PROBE_DIR),
                 "reinstall bigmac-bringup, or set [trainer] probe = false to run without it"));
}

std::map<std::string, std::string> trainer_environment(
    const config::Config& config, const fs::path& attempt_dir, const fs::path& probe_dir,
    const std::string& inherited_pythonpath,
    const std::map<std::string, std::string>& placeholders) {
  std::map<std::string, std::string> env = {{"PYTHONUNBUFFERED", "1"}};
  const auto user = [&](const char* name) -> const std::string* {
    auto it = config.trainer_env.find(name);
    return it == config.trainer_env.end() ? nullptr : &std::get<std::string>(it->second.value);
  };
  if (config.trainer.probe) {
    // The probe goes first so that its sitecustomize is the one Python imports; it then runs
    // the next one on the path itself.
    const std::string* rest = user("PYTHONPATH");
    const std::string& after = rest ? *rest : inherited_pythonpath;
    env["PYTHONPATH"] = after.empty() ? probe_dir.string() : probe_dir.string() + ":" + after;
    env["BIGMAC_PROBE_LOG"] = (attempt_dir / kProbeLogPattern).string();
    // The probe ends every rank cleanly once the gate's steps are done, so a program with no
    // step flag, or one that counts its steps otherwise, runs exactly the gate's steps.
    env["BIGMAC_PROBE_MAX_STEPS"] = std::to_string(std::max(1, config.train.max_steps));
    // A program that starts its own workers with torch.multiprocessing.spawn runs its worker
    // in each rank the launcher starts instead, in the gate's world (docs/probe.md).
    env.emplace("BIGMAC_PROBE_SPAWN_IN_PLACE", "1");
  }
  for (const auto& [name, setting] : config.trainer_env) {
    if (name == "PYTHONPATH" && config.trainer.probe) continue;  // kept after the probe above
    env[name] = substitute(std::get<std::string>(setting.value), placeholders);
  }
  return env;
}

}  // namespace bigmac::launch
