#include "config/constraints.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "config/layering.h"
#include "core/checked_integer.h"

namespace bigmac::config {
namespace {

void add_derived(Config& c, std::string key, Value value, std::string formula) {
  Origin origin{SourceKind::kDerived, std::move(formula), 0, 0};
  c.settings.entries.push_back(Setting{std::move(key), value, origin, {{value, origin}}});
}

// micro × accum × dp, when it fits an int.
std::optional<int> global_batch(const Config& c) {
  auto product =
      checked_multiply(std::int64_t{c.train.micro_batch_size}, c.train.gradient_accumulation_steps);
  if (product) product = checked_multiply(*product, c.derived.dp);
  return product ? narrow<int>(*product) : std::nullopt;
}

}  // namespace

std::optional<std::pair<int, int>> parse_rank_pair(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto a = parse_integer_as<int>(text.substr(0, colon));
  auto b = parse_integer_as<int>(text.substr(colon + 1));
  if (!a || !b) return std::nullopt;
  return std::pair{*a, *b};
}

void derive(Config& c) {
  DerivedConfig& d = c.derived;
  d.world_size = c.launch.world_size();
  add_derived(c, "derived.world_size", std::int64_t{d.world_size},
              fmt::format("launch.nnodes × launch.nproc_per_node = {} × {}", c.launch.nnodes,
                          c.launch.nproc_per_node));
  // int64: pp_size × tp_size and the global batch may pass INT_MAX before the constraints
  // below refuse them.
  const std::int64_t model_ways = std::int64_t{c.parallel.pp_size} * c.parallel.tp_size;
  d.dp = model_ways > 0 && d.world_size % model_ways == 0
             ? static_cast<int>(d.world_size / model_ways)
             : 0;
  add_derived(c, "derived.dp", std::int64_t{d.dp},
              fmt::format("world_size / (pp_size × tp_size) = {} / ({} × {})", d.world_size,
                          c.parallel.pp_size, c.parallel.tp_size));
  d.global_batch = global_batch(c).value_or(0);
  add_derived(c, "derived.global_batch", std::int64_t{d.global_batch},
              fmt::format("micro_batch_size × gradient_accumulation_steps × dp = {} × {} × {}",
                          c.train.micro_batch_size, c.train.gradient_accumulation_steps, d.dp));
  d.micro_batches =
      c.parallel.micro_batches > 0 ? c.parallel.micro_batches : c.train.gradient_accumulation_steps;
  add_derived(c, "derived.micro_batches", std::int64_t{d.micro_batches},
              c.parallel.micro_batches > 0 ? "parallel.micro_batches"
                                           : "train.gradient_accumulation_steps");
  if (c.model.split_points_auto) {
    c.model.split_points.clear();
    const int pp = c.parallel.pp_size;
    // More stages than layers is refused below; expanding it would only cost memory.
    for (int i = 1; i < pp && pp <= c.model.num_layers; ++i) {
      c.model.split_points.push_back(static_cast<int>(std::int64_t{c.model.num_layers} * i / pp));
    }
    std::vector<std::int64_t> points(c.model.split_points.begin(), c.model.split_points.end());
    add_derived(c, "derived.split_points", points,
                fmt::format("auto: num_layers × i / pp_size for i in 1..{} (num_layers {})", pp - 1,
                            c.model.num_layers));
  }
}

Errors check_constraints(const Config& c) {
  Errors errors;
  const SettingTable& t = c.settings;
  const int world = c.derived.world_size;
  const int pp = c.parallel.pp_size;
  const int tp = c.parallel.tp_size;
  if (world % (std::int64_t{pp} * tp) != 0) {
    errors.push_back(error_at_setting(
        t, "parallel.pp_size",
        fmt::format("world_size {} is not divisible by pp_size {} × tp_size {} (= {})", world, pp,
                    tp, std::int64_t{pp} * tp),
        fmt::format("dp = world_size / (pp_size × tp_size) must be whole: make "
                    "launch.nnodes × launch.nproc_per_node a multiple of {}, or change pp_size",
                    std::int64_t{pp} * tp)));
  } else if (!global_batch(c)) {
    errors.push_back(error_at_setting(
        t, "train.micro_batch_size",
        fmt::format("the global batch micro_batch_size {} × gradient_accumulation_steps {} × dp {} "
                    "is more than {} samples per step",
                    c.train.micro_batch_size, c.train.gradient_accumulation_steps, c.derived.dp,
                    std::numeric_limits<int>::max()),
        "lower micro_batch_size or gradient_accumulation_steps"));
  }
  const int layers = c.model.num_layers;
  if (layers < pp) {
    errors.push_back(error_at_setting(
        t, "model.num_layers",
        fmt::format("num_layers {} is less than pp_size {}: every stage needs a layer", layers,
                    pp)));
  }
  if (!c.model.split_points_auto) {
    const auto& sp = c.model.split_points;
    if (static_cast<int>(sp.size()) != pp - 1) {
      errors.push_back(error_at_setting(
          t, "model.split_points",
          fmt::format("{} split points given; pp_size {} needs exactly {}", sp.size(), pp, pp - 1),
          "or write split_points = \"auto\""));
    }
    for (std::size_t i = 0; i < sp.size(); ++i) {
      if (sp[i] <= 0 || sp[i] >= layers) {
        errors.push_back(error_at_setting(
            t, "model.split_points",
            fmt::format("split point {} is outside (0, num_layers {}): a stage would own no "
                        "layer",
                        sp[i], layers)));
      }
      if (i > 0 && sp[i] <= sp[i - 1]) {
        errors.push_back(
            error_at_setting(t, "model.split_points",
                             fmt::format("split points must increase strictly, found {} after {}",
                                         sp[i], sp[i - 1])));
      }
    }
  }
  if (c.model.hidden % c.model.heads != 0) {
    errors.push_back(error_at_setting(
        t, "model.heads",
        fmt::format("hidden {} is not divisible by heads {}", c.model.hidden, c.model.heads)));
  }
  if (c.parallel.micro_batches > 0 &&
      c.parallel.micro_batches != c.train.gradient_accumulation_steps) {
    errors.push_back(error_at_setting(
        t, "parallel.micro_batches",
        fmt::format("micro_batches {} differs from gradient_accumulation_steps {}: each "
                    "pipeline micro-batch is one accumulation step",
                    c.parallel.micro_batches, c.train.gradient_accumulation_steps),
        "leave micro_batches unset (it is derived) or set both to the same value"));
  }
  if (c.launch.backend == "nccl" && c.launch.devices == "cpu") {
    errors.push_back(error_at_setting(t, "launch.backend",
                                      "backend nccl needs GPUs but devices is \"cpu\"",
                                      "use backend = \"gloo\" (or \"auto\") on CPU"));
  }
  if (c.trainer.kind == "command" && c.trainer.command.empty()) {
    errors.push_back(error_at_setting(t, "trainer.command",
                                      "trainer.kind is \"command\" but trainer.command is empty",
                                      "give the argv template, e.g. [\"python3\", \"train.py\"]"));
  }
  if (c.trainer.log_format == "regex" && c.log_fields.empty()) {
    errors.push_back(error_at_setting(t, "trainer.log_format",
                                      "log_format \"regex\" needs a [logs.fields] table",
                                      "map at least loss and step to regexes"));
  }
  for (std::size_t i = 0; i < c.trainer.fresh_paths.size(); ++i) {
    // Moving one of these aside would move the ranks' working directory (or all of /).
    const std::filesystem::path p =
        std::filesystem::path(c.trainer.fresh_paths[i]).lexically_normal();
    bool holds_cwd = p.empty() || p == p.root_path();
    if (!holds_cwd && p.is_relative()) {
      holds_cwd = std::all_of(p.begin(), p.end(), [](const std::filesystem::path& part) {
        return part == "." || part == ".." || part.empty();
      });
    }
    if (holds_cwd) {
      errors.push_back(error_at_setting(
          t, "trainer.fresh_paths",
          fmt::format("entry {} \"{}\" is, or holds, the ranks' working directory", i + 1,
                      c.trainer.fresh_paths[i]),
          "name the files the program resumes from (e.g. \"snapshot.pt\") or their own folder"));
    }
  }
  for (const char* key :
       {"faults.crash_rank", "faults.hang_rank", "faults.master_port_offset", "faults.stage_stall",
        "faults.extra_collective", "faults.collective_shape"}) {
    const Setting* s = t.find(key);
    const auto* text = s ? std::get_if<std::string>(&s->value) : nullptr;
    if (text && !text->empty() && !parse_rank_pair(*text)) {
      errors.push_back(error_at_setting(t, key,
                                        fmt::format("expected \"A:B\" (two integers), found "
                                                    "\"{}\"",
                                                    *text)));
    }
  }
  if (c.faults.boundary_seq_trim >= c.train.seq_length) {
    errors.push_back(
        error_at_setting(t, "faults.boundary_seq_trim",
                         fmt::format("boundary_seq_trim {} must be below seq_length {}",
                                     c.faults.boundary_seq_trim, c.train.seq_length)));
  }
  return errors;
}

}  // namespace bigmac::config
