#include "attempt/run_context.h"

#include <fmt/format.h>

#include "config/config_writer.h"
#include "gates/configuration_check.h"
#include "gates/gate_applicability.h"
#include "gates/gate_plan.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;
namespace {

fs::path own_directory() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

}  // namespace

std::optional<std::int64_t> Reference::samples_per_step() const {
  for (const baseline::BaselineStep& step : baseline.steps) {
    if (step.samples_per_step) return step.samples_per_step;
  }
  return std::nullopt;
}

fs::path reports_root() { return "reports"; }

tl::expected<RunContext, Errors> RunContext::create(config::Config config,
                                                    const RunSources& sources) {
  // The one validation `config check` runs too (gates/configuration_check).
  auto catalog = gates::check_configuration(config, gates::stages_directory(sources.stages));
  if (!catalog) return tl::unexpected(catalog.error());

  auto parser = logs::parser_options(config);
  if (!parser) return tl::unexpected(Errors{parser.error()});

  RunContext ctx;
  ctx.parser = std::move(*parser);
  ctx.config = std::move(config);
  ctx.catalog = std::move(*catalog);
  if (ctx.config.trainer.kind == "builtin") {
    ctx.trainer_binary = ctx.config.trainer.binary.empty() ? own_directory() / "bigmac-train"
                                                           : fs::path(ctx.config.trainer.binary);
  } else {
    ctx.trainer_binary = ctx.config.trainer.command.front();
  }
  // One stored baseline per configuration and device kind: numbers from a GPU never judge a
  // CPU run.
  ctx.baseline_name =
      (sources.config_file.empty() ? std::string("demo")
                                   : fs::path(sources.config_file).stem().string()) +
      "-" + ctx.config.launch.devices;
  ctx.config_file = sources.config_file;
  ctx.baseline_given = !sources.baseline.empty();
  if (ctx.baseline_given && sources.no_stored_baseline) {
    return tl::unexpected(Errors{make_error(
        ErrorKind::kUsage, "--baseline and --no-baseline contradict each other",
        "give one: --baseline FILE compares with FILE; --no-baseline records this run's own")});
  }
  if (!sources.no_stored_baseline) {
    ctx.stored_baseline = ctx.baseline_given
                              ? fs::path(sources.baseline)
                              : fs::path("baselines") / (ctx.baseline_name + ".json");
  }
  ctx.config_digest = baseline::text_digest(config::to_toml(ctx.config, ""));

  std::error_code ec;
  if (ctx.baseline_given && !fs::exists(ctx.stored_baseline, ec)) {
    return tl::unexpected(Errors{make_error(
        ErrorKind::kInput, fmt::format("{}: baseline file not found", ctx.stored_baseline.string()),
        "check the --baseline path, or leave --baseline out to record this run's own baseline "
        "from its first gate")});
  }
  if (!ctx.stored_baseline.empty() && fs::exists(ctx.stored_baseline, ec)) {
    // Read now so that a damaged stored baseline stops the run before anything launches,
    // instead of surfacing as "no baseline to compare against" at a later gate.
    if (auto loaded = baseline::load_baseline(ctx.stored_baseline); !loaded) {
      return tl::unexpected(Errors{loaded.error()});
    }
  }
  return ctx;
}

std::optional<fs::path> RunContext::reference_path(const fs::path& run_dir,
                                                   const std::string& gate) const {
  std::error_code ec;
  if (!stored_baseline.empty() && fs::exists(stored_baseline, ec)) return stored_baseline;
  if (!catalog.specs.empty() && catalog.specs.front().id == gate) return std::nullopt;
  fs::path recorded = run_dir / "baseline.json";
  if (fs::exists(recorded, ec)) return recorded;
  return std::nullopt;
}

Expected<std::optional<Reference>> RunContext::load_reference(const fs::path& run_dir,
                                                              const std::string& gate) const {
  auto path = reference_path(run_dir, gate);
  if (!path) return std::optional<Reference>{};
  auto loaded = baseline::load_baseline(*path);
  if (!loaded) return tl::unexpected(loaded.error());
  return std::optional<Reference>{
      Reference{*path, std::move(*loaded), baseline::file_digest(*path)}};
}

tl::expected<std::map<std::string, gates::GateInputs>, Errors> RunContext::inputs(
    const fs::path& run_dir) const {
  std::map<std::string, gates::GateInputs> out;
  Errors errors;
  for (const gates::GateSpec& spec : catalog.specs) {
    if (gates::not_applicable_reason(spec, config)) continue;  // never planned, never run
    auto reference = load_reference(run_dir, spec.id);
    // One damaged file would otherwise be reported once per gate.
    if (!reference) return tl::unexpected(Errors{reference.error()});
    const Reference* ref = *reference ? &**reference : nullptr;
    auto plan = gates::plan_gate(spec, config, ref ? ref->samples_per_step() : std::nullopt);
    if (!plan) {
      Error e = plan.error();
      e.message = fmt::format("gate {}: {}", spec.id, e.message);
      errors.push_back(std::move(e));
      continue;
    }
    out[spec.id] = gates::gate_inputs(*plan, trainer_binary, ref ? ref->digest : std::string());
  }
  if (!errors.empty()) return tl::unexpected(std::move(errors));
  return out;
}

baseline::Recorded RunContext::recorded(const gates::GatePlan& plan) const {
  baseline::Recorded r;
  r.commit = baseline::ci_commit();
  std::vector<fs::path> files{trainer_binary};
  if (config.trainer.kind != "builtin") {
    // The script and any other file the argv names: `python train.py` changes with train.py.
    std::error_code ec;
    for (std::size_t i = 1; i < config.trainer.command.size(); ++i) {
      const fs::path arg(config.trainer.command[i]);
      if (arg.string().find('{') == std::string::npos && fs::is_regular_file(arg, ec))
        files.push_back(arg);
    }
  }
  r.trainer_digest = baseline::trainer_digest(files);
  r.config = plan.inputs;
  return r;
}

std::vector<std::string> RunContext::command_line_settings() const {
  std::vector<std::string> out;
  for (const config::Setting& s : config.settings.entries) {
    if (s.origin.kind == config::SourceKind::kCommandLine)
      out.push_back(s.key + "=" + config::value_to_string(s.value));
  }
  return out;
}

}  // namespace bigmac::attempt
