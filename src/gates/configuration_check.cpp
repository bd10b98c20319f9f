#include "gates/configuration_check.h"

#include <fmt/format.h>

#include <cctype>

#include "config/layering.h"
#include "core/edit_distance.h"
#include "gates/gate_applicability.h"
#include "launch/launch_planner.h"
#include "launch/trainer_invocation.h"
#include "logs/field_map.h"

namespace bigmac::gates {
namespace {

// `{name}` tokens of an argv template that name no placeholder; other braces (a JSON argument)
// are not placeholders and are left alone.
void check_placeholders(const config::Config& config, Errors& errors) {
  const std::vector<std::string> names = launch::command_placeholders();
  const std::vector<std::string_view> known(names.begin(), names.end());
  for (const std::string& arg : config.trainer.command) {
    for (std::size_t open = arg.find('{'); open != std::string::npos;
         open = arg.find('{', open + 1)) {
      std::size_t end = open + 1;
      while (end < arg.size() &&
             (std::isalnum(static_cast<unsigned char>(arg[end])) || arg[end] == '_')) {
        ++end;
      }
      if (end == open + 1 || end >= arg.size() || arg[end] != '}') continue;
      const std::string name = arg.substr(open + 1, end - open - 1);
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      auto near = closest_match(name, known);
      errors.push_back(config::error_at_setting(
          config.settings, "trainer.command",
          fmt::format("unknown placeholder {{{}}} in \"{}\": it would reach the trainer as it "
                      "is",
                      name, arg),
          near ? fmt::format("did you mean {{{}}}?", *near)
               : "see docs/configuration.md, External trainers, for the placeholders"));
    }
  }
}

}  // namespace

std::filesystem::path stages_directory(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  if (std::filesystem::is_directory("stages", ec)) return "stages";
  const auto defaults = default_stages_directories();
  for (const auto& dir : defaults) {
    if (std::filesystem::is_directory(dir, ec)) return dir;
  }
  return defaults.back();  // load_gate_specs names both places
}

tl::expected<GateCatalog, Errors> check_configuration(const config::Config& config,
                                                      const std::filesystem::path& stages_dir) {
  Errors errors;
  check_placeholders(config, errors);
  if (!config.log_fields.empty()) {
    if (auto map = logs::FieldMap::compile(config.log_fields); !map) {
      errors.push_back(map.error());
    }
  }
  auto catalog = GateCatalog::load(stages_dir, config);
  if (!catalog) {
    errors.insert(errors.end(), catalog.error().begin(), catalog.error().end());
    return tl::unexpected(std::move(errors));
  }
  for (const GateSpec& spec : catalog->specs) {
    if (not_applicable_reason(spec, config)) continue;  // never planned, never run
    auto plan = plan_gate(spec, config);
    if (!plan) {
      errors.push_back(plan.error());
      continue;
    }
    for (Error& e : launch::launch_config_errors(plan->config)) {
      e.message = fmt::format("in gate '{}': {}", spec.id, e.message);
      errors.push_back(std::move(e));
    }
  }
  if (!errors.empty()) return tl::unexpected(std::move(errors));
  return std::move(*catalog);
}

}  // namespace bigmac::gates
