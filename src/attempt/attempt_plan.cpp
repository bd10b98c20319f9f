#include "attempt/attempt_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "config/config_writer.h"
#include "core/atomic_file.h"
#include "launch/launch_planner.h"
#include "launch/trainer_invocation.h"
#include "launch/trainer_probe.h"
#include "run/run_directory.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;

Expected<AttemptPlan> plan_attempt(const RunContext& context, const gates::GateSpec& spec,
                                   const Reference* reference, const fs::path& run_dir, int attempt,
                                   const std::vector<std::string>& visible_devices,
                                   int master_port) {
  const auto& specs = context.catalog.specs;
  const auto at = std::find_if(specs.begin(), specs.end(),
                               [&](const gates::GateSpec& s) { return s.id == spec.id; });
  AttemptPlan plan;
  plan.spec = &spec;
  plan.index = static_cast<std::size_t>(at - specs.begin());
  plan.total = specs.size();
  for (const gates::GateSpec& s : specs) plan.gate_ids.push_back(s.id);
  plan.attempt = attempt;
  plan.dir = run_dir / run::attempt_folder(plan.index, spec.id, attempt);
  plan.parser = context.parser;

  auto gate = gates::plan_gate(spec, context.config,
                               reference ? reference->samples_per_step() : std::nullopt);
  if (!gate) return tl::unexpected(gate.error());
  plan.gate = std::move(*gate);
  if (master_port > 0) plan.gate.config.launch.master_port = master_port;

  const config::Config& cfg = plan.gate.config;
  const bool yaml = cfg.trainer.kind == "command" && cfg.trainer.gate_config_format == "yaml";
  plan.gate_file = plan.dir / (yaml ? "gate.yaml" : "gate.toml");
  const std::string header = fmt::format(
      "bigmac-bringup gate {} ({}), attempt {}\nthe effective configuration of this gate's ranks",
      spec.id, spec.title, attempt);
  plan.gate_file_text = yaml ? config::to_yaml(cfg, header) : config::to_toml(cfg, header);

  const auto placeholders = launch::gate_placeholders(cfg, spec.id, plan.gate_file, run_dir);
  launch::PlanInputs inputs;
  inputs.trainer_argv = launch::trainer_argv(cfg, context.trainer_binary, placeholders);
  inputs.log_dir = plan.dir;
  inputs.extra_env = launch::gate_environment(cfg, placeholders);
  std::filesystem::path probe_dir;
  if (cfg.trainer.probe) {
    auto found = launch::probe_package_dir();
    if (!found) return tl::unexpected(found.error());
    probe_dir = *found;
    inputs.probe_log = plan.dir / launch::kProbeLogPattern;
  }
  const char* pythonpath = std::getenv("PYTHONPATH");
  for (auto& [name, value] : launch::trainer_environment(
           cfg, plan.dir, probe_dir, pythonpath ? pythonpath : "", placeholders)) {
    inputs.extra_env.insert_or_assign(name, std::move(value));
  }
  if (cfg.launch.devices != "cpu") inputs.visible_devices = visible_devices;
  auto launch_plan = launch::plan_launch(cfg, inputs);
  if (!launch_plan) return tl::unexpected(launch_plan.error());
  plan.launch = std::move(*launch_plan);
  return plan;
}

Expected<std::string> write_attempt_plan(const AttemptPlan& plan) {
  auto note = run::create_attempt_folder(plan.dir);  // new and empty, never an older attempt's
  if (!note) return tl::unexpected(note.error());
  if (auto w = write_file_atomically(plan.gate_file, plan.gate_file_text); !w) {
    return tl::unexpected(w.error());
  }
  if (auto w = launch::write_plan(plan.launch, plan.dir / launch::kLaunchPlanName); !w) {
    return tl::unexpected(w.error());
  }
  return note;
}

std::string format_attempt_plan(const AttemptPlan& plan, bool verbose) {
  std::string out = fmt::format("== gate {}/{} {}: {}\n", plan.index + 1, plan.total, plan.spec->id,
                                plan.spec->title) +
                    gates::format_plan(plan.gate);
  if (verbose) return out + launch::render_text(plan.launch) + "\n";
  const launch::LaunchPlan& l = plan.launch;
  out += fmt::format("launcher {}: {} rank{} on {} node{}, master {}:{}, devices {}, logs in {}\n",
                     launch::launcher_name(l.launcher), l.world_size, l.world_size == 1 ? "" : "s",
                     l.nnodes, l.nnodes == 1 ? "" : "s", l.master_addr,
                     l.master_port == 0 ? std::string("<a free port, picked as the gate starts>")
                                        : std::to_string(l.master_port),
                     l.devices, l.log_dir.string());
  if (!l.processes.empty()) {
    out +=
        fmt::format("  argv {}{}\n", launch::join_argv(l.processes.front().spec.argv),
                    l.processes.size() > 1
                        ? fmt::format("  (and {} more process{}; -v for each, with its env)",
                                      l.processes.size() - 1, l.processes.size() == 2 ? "" : "es")
                        : std::string("  (-v for its env)"));
  }
  return out + "\n";
}

nlohmann::json attempt_plan_json(const AttemptPlan& plan) {
  const gates::GatePlan& g = plan.gate;
  const config::Config& c = g.config;
  return {{"gate", plan.spec->id},
          {"number", plan.index + 1},
          {"title", plan.spec->title},
          {"applicable", true},
          {"processes", g.nproc},
          {"pp_size", c.parallel.pp_size},
          {"tp_size", c.parallel.tp_size},
          {"dp", c.derived.dp},
          {"schedule", c.parallel.schedule},
          {"micro_batch_size", c.train.micro_batch_size},
          {"gradient_accumulation_steps", c.train.gradient_accumulation_steps},
          {"samples_per_step", g.samples_per_step},
          {"micro_batches", c.derived.micro_batches},
          {"rescaled", g.rescaled},
          {"inputs", g.inputs},
          {"launch", launch::to_json(plan.launch)}};
}

}  // namespace bigmac::attempt
