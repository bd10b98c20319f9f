#include "cli/run_context.h"

#include <unistd.h>

#include <fmt/format.h>

#include "config/config_writer.h"

namespace bigmac::cli {
namespace fs = std::filesystem;
namespace {

fs::path own_directory() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

fs::path stages_dir(const RunCommandOptions& options) {
  if (!options.stages.empty()) return options.stages;
  if (fs::is_directory("stages")) return "stages";
  return BIGMAC_STAGES_DIR;
}

}  // namespace

fs::path reports_root() { return "reports"; }

tl::expected<RunContext, Errors> RunContext::create(const RunCommandOptions& options) {
  auto config = load_config(options.common);
  if (!config) return tl::unexpected(config.error());
  auto catalog = gates::GateCatalog::load(stages_dir(options), *config);
  if (!catalog) return tl::unexpected(catalog.error());

  RunContext ctx;
  ctx.config = std::move(*config);
  ctx.catalog = std::move(*catalog);
  if (ctx.config.trainer.kind == "builtin") {
    ctx.trainer_binary = ctx.config.trainer.binary.empty()
                             ? own_directory() / "bigmac-train"
                             : fs::path(ctx.config.trainer.binary);
  } else {
    ctx.trainer_binary = ctx.config.trainer.command.front();
  }
  // One stored baseline per configuration and device kind: numbers from a GPU never judge a
  // CPU run.
  ctx.baseline_name = (options.common.config_file.empty()
                           ? std::string("demo")
                           : fs::path(options.common.config_file).stem().string()) +
                      "-" + ctx.config.launch.devices;
  ctx.stored_baseline = options.baseline.empty()
                            ? fs::path("baselines") / (ctx.baseline_name + ".json")
                            : fs::path(options.baseline);
  ctx.config_digest = baseline::text_digest(config::to_toml(ctx.config, ""));
  return ctx;
}

std::optional<fs::path> RunContext::reference_path(const fs::path& run_dir,
                                                  const std::string& gate) const {
  if (fs::exists(stored_baseline)) return stored_baseline;
  if (!catalog.specs.empty() && catalog.specs.front().id == gate) return std::nullopt;
  fs::path recorded = run_dir / "baseline.json";
  if (fs::exists(recorded)) return recorded;
  return std::nullopt;
}

std::optional<baseline::Baseline> RunContext::reference(const fs::path& run_dir,
                                                       const std::string& gate) const {
  auto path = reference_path(run_dir, gate);
  if (!path) return std::nullopt;
  auto loaded = baseline::load_baseline(*path);
  if (!loaded) return std::nullopt;
  return std::move(*loaded);
}

Expected<gates::GatePlan> RunContext::plan(const gates::GateSpec& spec,
                                           const fs::path& run_dir) const {
  std::optional<std::int64_t> samples;
  if (auto ref = reference(run_dir, spec.id)) {
    for (const baseline::BaselineStep& step : ref->steps) {
      if (step.samples_per_step) {
        samples = step.samples_per_step;
        break;
      }
    }
  }
  return gates::plan_gate(spec, config, samples);
}

tl::expected<std::map<std::string, gates::GateInputs>, Errors> RunContext::inputs(
    const fs::path& run_dir) const {
  std::map<std::string, gates::GateInputs> out;
  Errors errors;
  for (const gates::GateSpec& spec : catalog.specs) {
    const auto reference = reference_path(run_dir, spec.id);
    auto plan = this->plan(spec, run_dir);
    if (!plan) {
      Error e = plan.error();
      e.message = fmt::format("gate {}: {}", spec.id, e.message);
      errors.push_back(std::move(e));
      continue;
    }
    out[spec.id] = gates::gate_inputs(*plan, trainer_binary, reference.value_or(fs::path()));
  }
  if (!errors.empty()) return tl::unexpected(std::move(errors));
  return out;
}

}  // namespace bigmac::cli
