#include "gates/gate_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "baseline/baseline.h"
#include "config/constraints.h"
#include "config/schema.h"
#include "core/checked_integer.h"
#include "core/json_file.h"
#include "launch/trainer_invocation.h"

namespace bigmac::gates {
namespace {

// Keys that say where to meet or how long to wait, not what to compute: changing them keeps a
// passed gate valid.
constexpr std::string_view kNotInputs[] = {
    "launch.master_addr", "launch.master_port", "launch.pick_free_port", "launch.init_timeout_s",
    "launch.stall_timeout_s", "launch.stall_min_s", "launch.stall_factor",
    // Where stale files are parked, not what trains.
    "trainer.fresh_paths"};

Error plan_error(const GateSpec& spec, std::string message, std::string hint) {
  Error e = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
  e.file = spec.path;
  e.key = "gates." + spec.id;
  return e;
}

// The value among the divisors of `n` closest to `near` (ties: the larger). Divisors come in
// pairs (d, n / d), so √n steps find them all, also for a large samples/step from a baseline.
std::int64_t closest_divisor(std::int64_t n, std::int64_t near) {
  std::int64_t best = 1;
  auto consider = [&](std::int64_t d) {
    const std::int64_t gap = std::llabs(d - near);
    const std::int64_t best_gap = std::llabs(best - near);
    if (gap < best_gap || (gap == best_gap && d > best)) best = d;
  };
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    consider(d);
    consider(n / d);
  }
  return best;
}

void set_value(config::Config& c, const std::string& key, const config::Value& value,
               const std::string& why) {
  const config::Origin origin{config::SourceKind::kDerived, why, 0, 0};
  for (config::Setting& s : c.settings.entries) {
    if (s.key == key) {
      if (s.value == value) return;
      s.value = value;
      s.origin = origin;
      s.assignments.push_back({value, origin});
      return;
    }
  }
  c.settings.entries.push_back(config::Setting{key, value, origin, {{value, origin}}});
}

// Which value keeps samples/step: the gate's `rescale`, or for "auto" the knob the program
// takes: its accumulation when it receives one and that divides, else its micro-batch. A
// command whose argv names neither may still read them from its BIGMAC_TRAIN_* variables:
// the accumulation then, and the samples_per_step check says what the ranks really ran.
std::string rescale_knob(const GateSpec& spec, const config::Config& c, std::int64_t reference,
                         std::int64_t micro, std::int64_t accum, std::int64_t dp) {
  if (spec.launch.rescale != "auto") return spec.launch.rescale;
  if (spec.launch.micro_batches > 0) return "micro";  // pinned micro-batches fix the accumulation
  const bool accum_knob = launch::trainer_receives(c, "grad_accum");
  const bool micro_knob = launch::trainer_receives(c, "micro_batch_size");
  if (accum_knob && (!micro_knob || reference % (micro * dp) == 0)) return "accum";
  if (micro_knob && (!accum_knob || reference % (accum * dp) == 0)) return "micro";
  return "accum";  // neither divides, or neither is handed: the accumulation's error says
}

std::string origin_of(const GateSpec& spec, const std::string& key) {
  auto it = spec.key_origins.find(key);
  return fmt::format("gate {} ({})", spec.id,
                     it == spec.key_origins.end() ? spec.path : it->second);
}

}  // namespace

Expected<GatePlan> plan_gate(const GateSpec& spec, const config::Config& base,
                             std::optional<std::int64_t> reference_samples) {
  GatePlan plan;
  plan.gate_id = spec.id;
  config::Config c = base;
  const GateLaunch& l = spec.launch;
  if (l.nproc) {
    c.launch.nnodes = 1;
    c.launch.nproc_per_node = *l.nproc;
    set_value(c, "launch.nnodes", std::int64_t{1}, origin_of(spec, "nproc"));
    set_value(c, "launch.nproc_per_node", std::int64_t{*l.nproc}, origin_of(spec, "nproc"));
  }
  if (l.pp) {
    if (*l.pp != c.parallel.pp_size && !c.model.split_points_auto &&
        static_cast<int>(c.model.split_points.size()) != *l.pp - 1) {
      // The configured cut is for another stage count; this gate cuts evenly instead.
      c.model.split_points_auto = true;
      set_value(c, "model.split_points", std::string("auto"), origin_of(spec, "pp"));
    }
    c.parallel.pp_size = *l.pp;
    set_value(c, "parallel.pp_size", std::int64_t{*l.pp}, origin_of(spec, "pp"));
  }
  if (l.tp) {
    c.parallel.tp_size = *l.tp;
    set_value(c, "parallel.tp_size", std::int64_t{*l.tp}, origin_of(spec, "tp"));
  }
  if (l.schedule != "config" && !l.schedule.empty()) {
    c.parallel.schedule = l.schedule;
    set_value(c, "parallel.schedule", l.schedule, origin_of(spec, "schedule"));
  }
  c.trace.shapes = l.trace_shapes;
  set_value(c, "trace.shapes", l.trace_shapes, origin_of(spec, "trace_shapes"));

  const int world = c.launch.world_size();
  const int ways = c.parallel.pp_size * c.parallel.tp_size;
  if (ways <= 0 || world % ways != 0) {
    const int fixed = std::max(ways, (world + ways - 1) / ways * ways);
    return tl::unexpected(
        plan_error(spec,
                   fmt::format("gate '{}' runs {} processes, not a multiple of pp × tp = {} × {}",
                               spec.id, world, c.parallel.pp_size, c.parallel.tp_size),
                   fmt::format("set gates.{}.nproc = {}", spec.id, fixed)));
  }
  const std::int64_t dp = world / ways;
  std::int64_t micro = c.train.micro_batch_size;
  std::int64_t accum = c.train.gradient_accumulation_steps;
  if (l.micro_batches > 0) {
    accum = l.micro_batches;
    c.parallel.micro_batches = l.micro_batches;
    set_value(c, "parallel.micro_batches", std::int64_t{l.micro_batches},
              origin_of(spec, "micro_batches"));
  }
  const std::int64_t reference = reference_samples.value_or(
      std::int64_t{base.train.micro_batch_size} * base.train.gradient_accumulation_steps);
  const std::int64_t before_micro = micro;
  const std::string rescale = rescale_knob(spec, c, reference, micro, accum, dp);
  if (rescale == "accum") {
    if (reference % (micro * dp) != 0) {
      // Only changes that work are offered: another dp when micro divides samples/step,
      // another micro when dp does, else both.
      std::vector<std::string> options;
      if (reference % micro == 0) {
        const std::int64_t dp_ok = closest_divisor(reference / micro, dp);
        options.push_back(
            fmt::format("set gates.{}.nproc = {} (dp {})", spec.id, dp_ok * ways, dp_ok));
      }
      if (reference % dp == 0) {
        options.push_back(
            fmt::format("set train.micro_batch_size = {}", closest_divisor(reference / dp, micro)));
      }
      if (options.empty()) {
        const std::int64_t micro_ok = closest_divisor(reference, micro);
        const std::int64_t dp_ok = closest_divisor(reference / micro_ok, dp);
        options.push_back(fmt::format("set train.micro_batch_size = {} and gates.{}.nproc = {}",
                                      micro_ok, spec.id, dp_ok * ways));
      }
      std::string hint;
      for (const std::string& o : options) hint += (hint.empty() ? "" : ", or ") + o;
      return tl::unexpected(plan_error(
          spec,
          fmt::format(
              "gate '{}' cannot keep {} samples/step: micro_batch_size {} × dp {} = {} does "
              "not divide it, so gradient_accumulation_steps cannot be rescaled exactly",
              spec.id, reference, micro, dp, micro * dp),
          hint));
    }
    accum = reference / (micro * dp);
  } else if (rescale == "micro") {
    if (reference % (accum * dp) != 0) {
      return tl::unexpected(plan_error(
          spec,
          fmt::format("gate '{}' cannot keep {} samples/step: micro-batches {} × dp {} = {} does "
                      "not divide it, so micro_batch_size cannot be rescaled exactly",
                      spec.id, reference, accum, dp, accum * dp),
          l.micro_batches > 0
              ? fmt::format("set gates.{}.micro_batches = {}", spec.id,
                            closest_divisor(std::max<std::int64_t>(1, reference / dp), accum))
          : launch::trainer_receives(c, "grad_accum")
              ? fmt::format("set train.gradient_accumulation_steps = {}",
                            closest_divisor(std::max<std::int64_t>(1, reference / dp), accum))
              // The program takes no accumulation: only the process count can change.
              : fmt::format("set gates.{}.nproc = {} (a process count that divides {} "
                            "samples/step; the program takes no gradient accumulation from the "
                            "gates)",
                            spec.id,
                            closest_divisor(std::max<std::int64_t>(1, reference / accum), dp) *
                                c.parallel.pp_size * c.parallel.tp_size,
                            reference)));
    }
    micro = reference / (accum * dp);
  }
  if (l.micro_batches > 0 && accum != l.micro_batches) {
    return tl::unexpected(
        plan_error(spec,
                   fmt::format("gate '{}' pins {} micro-batches but samples/step needs accum {}",
                               spec.id, l.micro_batches, accum),
                   "set rescale = \"micro\""));
  }
  const auto micro_int = narrow<int>(micro);
  const auto accum_int = narrow<int>(accum);
  if (!micro_int || !accum_int) {
    return tl::unexpected(plan_error(
        spec,
        fmt::format("gate '{}' would need micro_batch_size {} × gradient_accumulation_steps {} "
                    "to keep {} samples/step: more than a run can hold",
                    spec.id, micro, accum, reference),
        "check the samples_per_step of the baseline this run compares with"));
  }
  c.train.micro_batch_size = *micro_int;
  c.train.gradient_accumulation_steps = *accum_int;
  // An explicit micro-batch count must follow the rescaled accumulation (they are one value).
  if (c.parallel.micro_batches > 0) c.parallel.micro_batches = *accum_int;
  std::vector<std::string> changes;
  if (micro != before_micro) {
    changes.push_back(fmt::format("train.micro_batch_size {} -> {}", before_micro, micro));
    set_value(
        c, "train.micro_batch_size", micro,
        fmt::format("{}: rescaled to keep {} samples/step", origin_of(spec, "rescale"), reference));
  }
  if (accum != base.train.gradient_accumulation_steps) {
    changes.push_back(fmt::format("train.gradient_accumulation_steps {} -> {}",
                                  base.train.gradient_accumulation_steps, accum));
    set_value(
        c, "train.gradient_accumulation_steps", accum,
        fmt::format("{}: {}", origin_of(spec, l.micro_batches > 0 ? "micro_batches" : "rescale"),
                    l.micro_batches > 0
                        ? "pinned micro-batches"
                        : fmt::format("rescaled to keep {} samples/step", reference)));
  }
  std::erase_if(c.settings.entries,
                [](const config::Setting& s) { return s.key.starts_with("derived."); });
  config::derive(c);
  const Errors violations = config::check_constraints(c);
  if (!violations.empty()) {
    Error e = violations.front();
    e.message = fmt::format("in gate '{}': {}", spec.id, e.message);
    for (std::size_t i = 1; i < violations.size(); ++i)
      e.message += "\n  " + violations[i].format();
    return tl::unexpected(e);
  }
  plan.nproc = c.derived.world_size;
  plan.samples_per_step = micro * accum * dp;
  for (std::size_t i = 0; i < changes.size(); ++i) plan.rescaled += (i ? ", " : "") + changes[i];

  for (const config::SchemaEntry& entry : config::schema()) {
    const std::string key = entry.full_key();
    if (std::find(std::begin(kNotInputs), std::end(kNotInputs), key) != std::end(kNotInputs))
      continue;
    plan.inputs[key] = config::value_to_string(entry.get(c));
  }
  for (const auto& [key, value] : spec.raw_launch.items())
    plan.inputs["gate.launch." + key] = json_text(value);
  for (const auto& [key, value] : spec.params.items())
    plan.inputs["gate." + key] = json_text(value);
  std::string checks;
  for (const CheckSpec& check : spec.checks) checks += check.name + " ";
  plan.inputs["gate.checks"] = checks;
  if (spec.strict) plan.inputs["gate.strict"] = "true";  // a pass without --strict does not count
  std::string all;
  for (const auto& [key, value] : plan.inputs) all += key + "=" + value + "\n";
  plan.inputs_digest = baseline::text_digest(all);
  plan.config = std::move(c);
  return plan;
}

std::string format_plan(const GatePlan& p) {
  const config::Config& c = p.config;
  std::string out = fmt::format(
      "gate {}: {} process{} (pp {} × tp {} × dp {}), schedule {}, micro_batch_size {} × "
      "accum {} × dp {} = {} samples/step, {} micro-batches, trace.shapes {}",
      p.gate_id, p.nproc, p.nproc == 1 ? "" : "es", c.parallel.pp_size, c.parallel.tp_size,
      c.derived.dp, c.parallel.schedule, c.train.micro_batch_size,
      c.train.gradient_accumulation_steps, c.derived.dp, p.samples_per_step,
      c.derived.micro_batches, c.trace.shapes ? "on" : "off");
  if (c.parallel.pp_size > 1)
    out += fmt::format(", split at [{}]", fmt::join(c.model.split_points, ","));
  if (!p.rescaled.empty()) out += "\n  rescaled: " + p.rescaled;
  return out + "\n";
}

}  // namespace bigmac::gates
