#include "gates/gate_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/edit_distance.h"
#include "core/json_file.h"
#include "core/printable.h"
#include "gates/check_registry.h"
#include "gates/gate_params.h"

namespace bigmac::gates {
namespace {

constexpr std::string_view kTopKeys[] = {"id",      "title",  "order",  "route_back",
                                         "applies", "launch", "params", "checks"};
constexpr std::string_view kAppliesValues[] = {"always", "pipeline", "data_parallel"};
constexpr std::string_view kLaunchKeys[] = {"nproc",         "pp",           "tp",     "schedule",
                                            "micro_batches", "trace_shapes", "rescale"};
constexpr std::string_view kCheckKeys[] = {"name", "route_back", "when"};
constexpr std::int64_t kMaxOrder = 99;  // attempt folders are "NN-<id>.<attempt>"

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  auto match = closest_match(word, candidates);
  return match ? fmt::format("did you mean '{}'?", *match) : std::string();
}

std::string list(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Reads the [launch] table into typed values; `locate(key)` builds an error at the key's source.
template <class Locate>
void read_launch(const nlohmann::json& launch, GateLaunch& out, Errors& errors, Locate locate) {
  auto int_or = [&](const char* key, std::string_view word, std::optional<int>& target, int min) {
    auto it = launch.find(key);
    if (it == launch.end()) return;
    if (it->is_string() && it->get<std::string>() == word) {
      target.reset();
    } else if (it->is_number_integer() && it->get<std::int64_t>() >= min &&
               it->get<std::int64_t>() <= 1 << 20) {
      target = static_cast<int>(it->get<std::int64_t>());
    } else {
      errors.push_back(locate(
          fmt::format("launch.{}", key),
          fmt::format("expected an integer >= {} or \"{}\", found {}", min, word, it->dump())));
    }
  };
  out.nproc.reset();
  out.pp = 1;
  out.tp = 1;
  int_or("nproc", "all", out.nproc, 1);
  int_or("pp", "config", out.pp, 1);
  int_or("tp", "config", out.tp, 1);
  auto one_of = [&](const char* key, std::vector<std::string> choices, std::string& target) {
    auto it = launch.find(key);
    if (it == launch.end()) return;
    if (it->is_string() &&
        std::find(choices.begin(), choices.end(), it->get<std::string>()) != choices.end()) {
      target = it->get<std::string>();
      return;
    }
    std::string names;
    for (const auto& c : choices) names += (names.empty() ? "" : ", ") + c;
    errors.push_back(locate(fmt::format("launch.{}", key),
                            fmt::format("expected one of {}, found {}", names, it->dump())));
  };
  out.schedule = "config";
  one_of("schedule", {"config", "1f1b", "gpipe"}, out.schedule);
  out.rescale = "auto";
  one_of("rescale", {"auto", "accum", "micro", "none"}, out.rescale);
  if (auto it = launch.find("micro_batches"); it != launch.end()) {
    if (it->is_number_integer() && it->get<std::int64_t>() >= 0 &&
        it->get<std::int64_t>() < 1 << 20) {
      out.micro_batches = static_cast<int>(it->get<std::int64_t>());
    } else {
      errors.push_back(locate("launch.micro_batches",
                              fmt::format("expected an integer >= 0, found {}", it->dump())));
    }
  }
  if (auto it = launch.find("trace_shapes"); it != launch.end()) {
    if (it->is_boolean()) {
      out.trace_shapes = it->get<bool>();
    } else {
      errors.push_back(locate("launch.trace_shapes", "expected true or false"));
    }
  }
  if (out.micro_batches > 0 && out.rescale == "accum") {
    errors.push_back(locate("launch.micro_batches",
                            fmt::format("micro_batches = {} pins gradient_accumulation_steps, so "
                                        "it cannot be rescaled",
                                        out.micro_batches),
                            "set rescale = \"micro\" (or \"none\")"));
  }
}

template <class Locate>
void check_params(const nlohmann::json& params, const std::vector<CheckSpec>& checks,
                  Errors& errors, Locate locate) {
  for (ParamProblem& p : check_gate_params(params)) {
    errors.push_back(locate("params." + p.key, std::move(p.message), std::move(p.hint)));
  }
  // required_checks names checks of this gate (its kind and type are checked above).
  if (auto it = params.find("required_checks"); it != params.end() && it->is_array()) {
    std::vector<std::string_view> names;
    for (const CheckSpec& c : checks) names.push_back(c.name);
    for (const auto& v : *it) {
      if (!v.is_string()) continue;
      const std::string name = v.template get<std::string>();
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      const std::string hint = did_you_mean(name, names);
      errors.push_back(
          locate("params.required_checks",
                 fmt::format("required_checks names {}, not a check of this gate", json_text(v)),
                 hint.empty() ? "checks of this gate: " + list(names) : hint));
    }
  }
}

nlohmann::json value_json(const config::Value& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

// Whether an override may replace a parameter of this JSON type (ints widen to floats).
bool same_kind(const nlohmann::json& existing, const nlohmann::json& given) {
  if (existing.is_number())
    return given.is_number() && !(existing.is_number_integer() && given.is_number_float());
  if (existing.is_boolean()) return given.is_boolean();
  if (existing.is_string()) return given.is_string();
  if (existing.is_array()) return given.is_array();
  return false;
}

}  // namespace

Expected<GateSpec> parse_gate_spec(const config::DataFile& file) {
  Errors errors;
  auto locate = [&](const std::string& key, std::string message, std::string hint = {}) {
    return file.error_at(key, std::move(message), std::move(hint));
  };
  GateSpec spec;
  spec.path = file.path;
  const nlohmann::json& root = file.root;
  for (const auto& [key, value] : root.items()) {
    if (std::find(std::begin(kTopKeys), std::end(kTopKeys), key) == std::end(kTopKeys)) {
      errors.push_back(locate(key, fmt::format("unknown key '{}' in a gate file", key),
                              did_you_mean(key, kTopKeys)));
    }
  }
  auto text = [&](const char* key, bool required) -> std::string {
    auto it = root.find(key);
    if (it == root.end()) {
      if (required) {
        Error e = make_error(ErrorKind::kConfig, fmt::format("missing key '{}'", key));
        e.file = file.path;
        errors.push_back(e);
      }
      return {};
    }
    if (!it->is_string()) errors.push_back(locate(key, "expected a string"));
    return it->is_string() ? it->get<std::string>() : std::string();
  };
  spec.id = text("id", true);
  if (root.contains("id") && root["id"].is_string() && !valid_gate_id(spec.id)) {
    errors.push_back(locate("id", fmt::format("gate id \"{}\" is not a plain name", spec.id),
                            "use letters, digits, '_' and '-', not digits alone: it names the "
                            "attempt folders, and a number names the gate of that order"));
  }
  spec.title = text("title", false);
  spec.route_back = text("route_back", false);
  if (spec.route_back.empty()) spec.route_back = spec.id;
  if (root.contains("applies")) {
    const std::string applies = text("applies", false);
    if (applies == "pipeline") {
      spec.applies = GateApplies::kPipeline;
    } else if (applies == "data_parallel") {
      spec.applies = GateApplies::kDataParallel;
    } else if (applies != "always") {
      errors.push_back(locate("applies", fmt::format("expected one of {}, found \"{}\"",
                                                     list(kAppliesValues), applies)));
    }
  }
  if (auto it = root.find("order"); it == root.end()) {
    errors.push_back(locate("id", "missing key 'order' (an integer)"));
  } else if (auto order = json_integer(*it); !order || *order < 1 || *order > kMaxOrder) {
    errors.push_back(locate(
        "order", fmt::format("expected an integer from 1 to {}, found {}", kMaxOrder, it->dump())));
  } else {
    spec.order = static_cast<int>(*order);
  }
  if (auto it = root.find("launch"); it != root.end()) {
    if (!it->is_object()) {
      errors.push_back(locate("launch", "expected a table [launch]"));
    } else {
      spec.raw_launch = *it;
      for (const auto& [key, value] : it->items()) {
        if (std::find(std::begin(kLaunchKeys), std::end(kLaunchKeys), key) ==
            std::end(kLaunchKeys)) {
          errors.push_back(locate("launch." + key, fmt::format("unknown key '{}' in [launch]", key),
                                  did_you_mean(key, kLaunchKeys)));
        }
      }
      read_launch(*it, spec.launch, errors, locate);
    }
  }
  if (auto it = root.find("params"); it != root.end()) {
    if (!it->is_object()) {
      errors.push_back(locate("params", "expected a table [params]"));
    } else {
      spec.params = *it;
    }
  }
  std::vector<std::string_view> names;
  for (const RegisteredCheck& c : registered_checks()) names.push_back(c.name);
  auto checks = root.find("checks");
  if (checks == root.end() || !checks->is_array() || checks->empty()) {
    errors.push_back(checks == root.end()
                         ? locate("id", "a gate needs at least one [[checks]] entry")
                         : locate("checks", "expected one or more [[checks]] tables"));
  } else {
    for (std::size_t i = 0; i < checks->size(); ++i) {
      const nlohmann::json& c = (*checks)[i];
      const std::string at = fmt::format("checks[{}]", i);
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) {
        errors.push_back(locate(at, "expected a table with name = \"<check>\""));
        continue;
      }
      for (const auto& [key, value] : c.items()) {
        if (std::find(std::begin(kCheckKeys), std::end(kCheckKeys), key) == std::end(kCheckKeys))
          errors.push_back(locate(at + "." + key, fmt::format("unknown key '{}' in a check", key),
                                  did_you_mean(key, kCheckKeys)));
      }
      CheckSpec check;
      check.name = c["name"].get<std::string>();
      if (!find_check(check.name)) {
        std::string hint = did_you_mean(check.name, names);
        errors.push_back(locate(at + ".name", fmt::format("unknown check '{}'", check.name),
                                hint.empty() ? "known checks: " + list(names) : hint));
      }
      if (c.contains("route_back")) check.route_back = c.value("route_back", "");
      if (c.contains("when")) {
        if (c["when"] != "baseline" && c["when"] != "always") {
          errors.push_back(locate(at + ".when", "expected \"baseline\" or \"always\""));
        }
        check.needs_baseline = c["when"] == "baseline";
      }
      spec.checks.push_back(check);
    }
  }
  check_params(spec.params, spec.checks, errors, locate);
  for (const auto& [key, pos] : file.positions) {
    if (key.starts_with("launch.") || key.starts_with("params.")) {
      spec.key_origins[key.substr(key.find('.') + 1)] =
          fmt::format("{}:{}:{}", file.path, pos.line, pos.column);
    }
  }
  if (!errors.empty()) {
    // One error back; the rest are appended to its message so none is lost.
    Error first = errors.front();
    for (std::size_t i = 1; i < errors.size(); ++i) first.message += "\n  " + errors[i].format();
    return tl::unexpected(first);
  }
  return spec;
}

Expected<GateSpec> load_gate_spec(const std::filesystem::path& path) {
  auto file = config::load_data_file(path);
  if (!file) return tl::unexpected(file.error());
  return parse_gate_spec(*file);
}

Errors check_route_backs(const std::vector<GateSpec>& specs) {
  Errors errors;
  for (const GateSpec& spec : specs) {
    std::vector<std::pair<std::string, std::string>> routes{{"route_back", spec.route_back}};
    for (const CheckSpec& c : spec.checks) {
      routes.emplace_back(fmt::format("checks.{}.route_back", c.name), c.route_back);
    }
    for (const auto& [key, value] : spec.params.items()) {
      if (key.find("_route_back_") != std::string::npos && value.is_string())
        routes.emplace_back("params." + key, value.get<std::string>());
    }
    for (const auto& [key, route] : routes) {
      if (route.empty()) continue;
      const GateSpec* target = find_gate(specs, route);
      std::string message;
      if (!target) {
        message = fmt::format("route_back '{}' of gate '{}' names no gate", route, spec.id);
      } else if (target->order > spec.order) {
        message = fmt::format(
            "route_back '{}' of gate '{}' names a later gate (order {} after {}): a failure of "
            "'{}' is fixed there or at an earlier gate",
            route, spec.id, target->order, spec.order, spec.id);
      } else {
        continue;
      }
      Error e = make_error(ErrorKind::kConfig, std::move(message),
                           fmt::format("route back to '{}' or an earlier gate", spec.id));
      e.file = spec.path;
      e.key = key;
      errors.push_back(e);
    }
  }
  return errors;
}

tl::expected<std::vector<GateSpec>, Errors> load_gate_specs(const std::filesystem::path& dir) {
  Errors errors;
  std::vector<GateSpec> specs;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() == ".toml") {
      files.push_back(path);
    } else if (const std::string name = path.filename().string();
               !name.empty() && std::isdigit(static_cast<unsigned char>(name.front()))) {
      // A gate file renamed by a typo (03-pp2.tml) would drop its gate without a word.
      Error e = make_error(ErrorKind::kConfig,
                           fmt::format("'{}' is named like a gate file but does not end in .toml, "
                                       "so it is not read",
                                       name),
                           "rename it to end in .toml, or move it out of the gate directory");
      e.file = path.string();
      errors.push_back(e);
    }
  }
  if (ec) {
    const auto defaults = default_stages_directories();
    if (std::find(defaults.begin(), defaults.end(), dir) != defaults.end() &&
        !std::filesystem::exists(dir)) {
      // Neither the installed gate files nor the source tree's: name both places looked in.
      return tl::unexpected(
          Errors{make_error(ErrorKind::kInput,
                            fmt::format("the gate files are missing (no {} nor {})",
                                        defaults.front().string(), defaults.back().string()),
                            "reinstall bigmac-bringup, or give the gate directory with --stages")});
    }
    Error e = make_error(ErrorKind::kInput, "cannot read the gate directory: " + ec.message());
    e.file = dir.string();
    return tl::unexpected(Errors{e});
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    auto file = config::load_data_file(path);
    if (!file) {
      errors.push_back(file.error());
      continue;
    }
    // The diagnosis catalog shares the folder; any other file without an id is a gate file
    // that lost it (or was emptied), which must not silently drop its gate.
    if (file->root.contains("signature")) continue;
    auto spec = parse_gate_spec(*file);
    if (!spec) {
      errors.push_back(spec.error());
      continue;
    }
    // The title is printed (plan, the gate file's header): none of its control characters is.
    spec->title = printable(spec->title);
    // A check listed twice would be run and reported twice, its verdict counted twice.
    for (std::size_t i = 0; i < spec->checks.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (spec->checks[j].name != spec->checks[i].name) continue;
        errors.push_back(
            file->error_at(fmt::format("checks[{}].name", i),
                           fmt::format("check '{}' is listed twice in [[checks]] (also checks[{}])",
                                       spec->checks[i].name, j),
                           "keep one entry per check"));
        break;
      }
    }
    specs.push_back(std::move(*spec));
  }
  std::sort(specs.begin(), specs.end(),
            [](const GateSpec& a, const GateSpec& b) { return a.order < b.order; });
  std::set<std::string> ids;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i > 0 && specs[i].order == specs[i - 1].order) {
      errors.push_back(make_error(ErrorKind::kConfig,
                                  fmt::format("gates '{}' and '{}' have the same order {}",
                                              specs[i - 1].id, specs[i].id, specs[i].order)));
    }
    if (!ids.insert(specs[i].id).second) {
      errors.push_back(
          make_error(ErrorKind::kConfig, fmt::format("gate id '{}' twice", specs[i].id)));
    }
  }
  const Errors routes = check_route_backs(specs);
  errors.insert(errors.end(), routes.begin(), routes.end());
  if (specs.empty() && errors.empty()) {
    Error e = make_error(ErrorKind::kInput, "no gate files (stages/0N-*.toml) found");
    e.file = dir.string();
    errors.push_back(e);
  }
  if (!errors.empty()) return tl::unexpected(errors);
  return specs;
}

std::vector<std::filesystem::path> default_stages_directories() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path installed =
      (self.parent_path() / ".." / "share" / "bigmac-bringup" / "stages").lexically_normal();
  return {installed, std::filesystem::path(BIGMAC_STAGES_DIR)};
}

tl::expected<GateSpec, Errors> apply_overrides(
    GateSpec spec, const std::map<std::string, config::Setting>& overrides) {
  Errors errors;
  std::vector<std::string> keys;
  for (const auto& [k, v] : spec.raw_launch.items()) keys.push_back(k);
  for (std::string_view k : kLaunchKeys) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.emplace_back(k);
  }
  for (const auto& [k, v] : spec.params.items()) keys.push_back(k);
  std::vector<std::string_view> key_views(keys.begin(), keys.end());
  for (const auto& entry : overrides) {
    // Named, not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string& key = entry.first;
    const config::Setting& setting = entry.second;
    auto locate = [&](const std::string&, std::string message, std::string hint = {}) {
      Error e = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
      if (setting.origin.kind == config::SourceKind::kFile) {
        e.file = setting.origin.where;
        e.line = setting.origin.line;
        e.column = setting.origin.column;
      } else {
        e.message += " (set by " + setting.origin.describe() + ")";
      }
      e.key = setting.key.empty() ? "gates." + spec.id + "." + key : setting.key;
      return e;
    };
    const std::string where = setting.origin.kind == config::SourceKind::kFile
                                  ? fmt::format("{}:{}:{}", setting.origin.where,
                                                setting.origin.line, setting.origin.column)
                                  : setting.origin.describe();
    const nlohmann::json given = value_json(setting.value);
    const bool is_launch =
        std::find(std::begin(kLaunchKeys), std::end(kLaunchKeys), key) != std::end(kLaunchKeys);
    if (is_launch) {
      spec.raw_launch[key] = given;
      spec.key_origins[key] = where + fmt::format(" ([gates.{}])", spec.id);
    } else if (spec.params.contains(key)) {
      if (!same_kind(spec.params[key], given)) {
        errors.push_back(
            locate(key, fmt::format("{} expects a value like {} (from {}), found {}", key,
                                    json_text(spec.params[key]), spec.path, json_text(given))));
        continue;
      }
      spec.params[key] = given;
      spec.key_origins[key] = where + fmt::format(" ([gates.{}])", spec.id);
    } else {
      std::string hint = did_you_mean(key, key_views);
      if (hint.empty()) {
        hint = "keys of this gate: ";
        for (const std::string& k : keys) hint += k + (k == keys.back() ? "" : ", ");
      }
      errors.push_back(locate(
          key, fmt::format("gate '{}' ({}) has no key '{}'", spec.id, spec.path, key), hint));
    }
  }
  // A problem found in the merged tables is reported where the override was written.
  auto at_override = [&](const std::string& k, std::string m, std::string h = {}) {
    const std::string bare = k.substr(k.find('.') + 1);
    Error e = make_error(ErrorKind::kConfig, std::move(m), std::move(h));
    e.key = "gates." + spec.id + "." + bare;
    auto it = overrides.find(bare);
    if (it == overrides.end()) return e;
    if (it->second.origin.kind == config::SourceKind::kFile) {
      e.file = it->second.origin.where;
      e.line = it->second.origin.line;
      e.column = it->second.origin.column;
    } else {
      e.message += " (set by " + it->second.origin.describe() + ")";
    }
    return e;
  };
  read_launch(spec.raw_launch, spec.launch, errors, at_override);
  check_params(spec.params, spec.checks, errors, at_override);
  if (!errors.empty()) return tl::unexpected(errors);
  return spec;
}

bool valid_gate_id(std::string_view id) {
  if (id.empty() || id.size() > 64 || !std::isalnum(static_cast<unsigned char>(id.front()))) {
    return false;
  }
  // "3" would be read as the third gate wherever a gate is named by id or number.
  if (std::all_of(id.begin(), id.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

bool is_required(const GateSpec& spec, std::string_view check) {
  if (spec.strict) return true;
  auto it = spec.params.find("required_checks");
  if (it == spec.params.end() || !it->is_array()) return true;
  return std::any_of(it->begin(), it->end(), [&](const nlohmann::json& name) {
    return name.is_string() && name.get<std::string>() == check;
  });
}

const GateSpec* find_gate(const std::vector<GateSpec>& specs, std::string_view name) {
  for (const GateSpec& s : specs) {
    if (s.id == name || std::to_string(s.order) == name) return &s;
  }
  return nullptr;
}

}  // namespace bigmac::gates
