#include "cli/run_options.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "config/config_printer.h"
#include "core/atomic_file.h"
#include "core/json_file.h"
#include "core/map_changes.h"
#include "run/run_directory.h"

namespace bigmac::cli {
namespace fs = std::filesystem;

Expected<Invocation> with_recorded_invocation(RunCommandOptions options, const fs::path& run_path) {
  // A -c given here names a file relative to this directory, which may not be where the run
  // started (the command then continues there).
  if (!options.common.config_file.empty()) {
    options.common.config_file = fs::absolute(options.common.config_file).string();
  }
  Invocation out{options, fs::current_path(), std::nullopt};
  std::error_code ec;
  const fs::path file = run_path / run::kInvocationFile;
  if (!fs::exists(file, ec)) return out;
  auto text = read_file(file);
  if (!text) return tl::unexpected(text.error());
  constexpr const char* kWhatToDo =
      "give the configuration again with -c/--set, or start a new run";
  auto parsed = parse_json(*text, file);
  if (!parsed) {
    // Located (file:line:col) and worded by parse_json: 1e999 and a truncated file alike.
    Error e = std::move(parsed.error());
    e.message = "damaged run invocation: " + e.message;
    e.hint = kWhatToDo;
    return tl::unexpected(e);
  }
  const nlohmann::json& j = *parsed;
  auto damaged = [&](const std::string& why) {
    Error e = make_error(ErrorKind::kInput, "damaged run invocation: " + why, kWhatToDo);
    e.file = file.string();
    return tl::unexpected(e);
  };
  if (!j.is_object()) return damaged("not a JSON object");
  try {
    RunCommandOptions recorded = options;
    recorded.common.config_file = j.value("config", std::string());
    recorded.common.sets = j.value("set", std::vector<std::string>());
    if (options.common.config_file.empty()) {
      // --set alone layers on the run's own configuration: its file, then its --set, then
      // these. Only -c restates the configuration (and with it every --set).
      out.options.common.config_file = recorded.common.config_file;
      out.options.common.sets = recorded.common.sets;
      out.options.common.sets.insert(out.options.common.sets.end(), options.common.sets.begin(),
                                     options.common.sets.end());
    }
    if (options.baseline.empty() && !options.no_baseline) {
      out.options.baseline = j.value("baseline", std::string());
      out.options.no_baseline = j.value("no_baseline", false);
    }
    if (options.stages.empty()) out.options.stages = j.value("stages", std::string());
    if (!options.strict) out.options.strict = j.value("strict", false);
    if (j.contains("cwd")) out.cwd = j.at("cwd").get<std::string>();
    out.recorded = std::move(recorded);
  } catch (const nlohmann::json::exception& e) {
    return damaged(e.what());
  }
  return out;
}

nlohmann::json invocation_record(const RunCommandOptions& options) {
  auto absolute = [](const std::string& path) {
    return path.empty() ? std::string() : fs::absolute(path).string();
  };
  return {{"config", absolute(options.common.config_file)},
          {"set", options.common.sets},
          {"baseline", absolute(options.baseline)},
          {"no_baseline", options.no_baseline},
          {"strict", options.strict},
          {"stages", absolute(options.stages)},
          {"cwd", fs::current_path().string()}};
}

namespace {

/// table.key (gates.dp.key, trainer.env.NAME) -> the value as JSON text, every leaf.
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      flatten(value, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  out[prefix] = json_text(j);
}

}  // namespace

std::vector<std::string> config_changes(const config::Config& before, const config::Config& after) {
  std::map<std::string, std::string> old_values;
  std::map<std::string, std::string> new_values;
  flatten(config::config_to_json(before, {}), "", old_values);
  flatten(config::config_to_json(after, {}), "", new_values);
  std::vector<std::string> out;
  for (const MapChange& c : map_changes(old_values, new_values)) {
    if (!c.after) {
      out.push_back(fmt::format("{} = {} (gone)", c.key, *c.before));
    } else if (!c.before) {
      out.push_back(fmt::format("{} = {} (new)", c.key, *c.after));
    } else {
      out.push_back(fmt::format("{}: {} -> {}", c.key, *c.before, *c.after));
    }
  }
  return out;
}

tl::expected<attempt::RunContext, Errors> make_run_context(const RunCommandOptions& options) {
  auto config = load_config(options.common);
  if (!config) return tl::unexpected(config.error());
  auto context = attempt::RunContext::create(
      std::move(*config),
      {options.common.config_file, options.baseline, options.stages, options.no_baseline});
  if (context && options.strict) {
    for (gates::GateSpec& spec : context->catalog.specs) spec.strict = true;
  }
  return context;
}

}  // namespace bigmac::cli
