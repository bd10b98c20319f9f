#include "cli/run_options.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_file.h"

namespace bigmac::cli {
namespace fs = std::filesystem;

Expected<Invocation> with_recorded_invocation(RunCommandOptions options, const fs::path& run_path) {
  Invocation out{options, fs::current_path()};
  if (!options.common.config_file.empty() || !options.common.sets.empty()) return out;
  std::error_code ec;
  const fs::path file = run_path / kInvocationFile;
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
    out.options.common.config_file = j.value("config", std::string());
    out.options.common.sets = j.value("set", std::vector<std::string>());
    if (options.baseline.empty() && !options.no_baseline) {
      out.options.baseline = j.value("baseline", std::string());
      out.options.no_baseline = j.value("no_baseline", false);
    }
    if (options.stages.empty()) out.options.stages = j.value("stages", std::string());
    if (!options.strict) out.options.strict = j.value("strict", false);
    if (j.contains("cwd")) out.cwd = j.at("cwd").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return damaged(e.what());
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
