#include "audit/python_reader.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

namespace bigmac::audit {
namespace {

using nlohmann::json;

/// The layer a Python place belongs to: the nearest enclosing dict key that names a layer,
/// else its class (an nn.Module is the model; a dataclass by its name), else the file's name
/// (model.py), else the training entry's schedule layer.
config::Layer python_layer(const json& context, const std::string& file) {
  const auto& keys = context.value("keys", json::array());
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    if (auto layer = section_layer(it->get<std::string>())) return *layer;
  }
  if (context.value("class_kind", "") == "module") return config::Layer::kModel;
  if (auto layer = section_layer(context.value("class", ""))) return *layer;
  if (auto layer = section_layer(std::filesystem::path(file).stem().string())) return *layer;
  return config::Layer::kSchedule;
}

SettingValue value_of(const json& value) {
  if (value.is_string()) return SettingValue::from_text(value.get<std::string>());
  if (value.is_null()) return SettingValue::from_text("None");
  if (value.is_boolean()) return SettingValue::from_text(value.get<bool>() ? "true" : "false");
  return SettingValue::from_text(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

void add_place(const json& entry, const std::string& file, ProjectFacts& facts) {
  const std::string name = entry.value("name", "");
  const auto setting = find_setting(name);
  if (!setting) return;
  const std::string role = entry.value("role", "");
  const json context = entry.value("context", json::object());
  // A keyword given to a config class belongs to that class's layer: ModelArgs(n_layers=6).
  const auto call_layer = section_layer(entry.value("call", ""));
  Place p = Place::at(file, entry.value("line", 0), *setting, PlaceKind::kRead, Source::kCode,
                      call_layer ? *call_layer : python_layer(context, file));
  p.spelling = name;
  const bool literal = entry.value("literal", false);
  if (role == "read" || role == "argument" || role == "env_read") {
    p.note = role == "argument"   ? "argparse option, no default"
             : role == "env_read" ? "environment variable"
                                  : "";
    if (role == "env_read" && literal)
      p.note += " (fallback " + value_of(entry["value"]).text + ")";
  } else {
    static const std::map<std::string, std::pair<Source, std::string>> sources = {
        {"argparse", {Source::kDefault, "argparse default"}},
        {"field", {Source::kDefault, "field default"}},
        {"param", {Source::kDefault, "parameter default"}},
        {"dict", {Source::kDefault, "dict literal"}},
        {"keyword", {Source::kCode, "keyword argument"}},
        {"env_write", {Source::kEnvironment, "os.environ"}},
    };
    auto it = sources.find(role);
    if (it != sources.end()) {
      p.source = it->second.first;
      p.note = it->second.second;
    } else {  // assign: a module constant is a default; anything else runs after loading
      const bool constant = entry.value("target", "") == "constant";
      p.source = constant ? Source::kDefault : Source::kCode;
      p.note = constant ? "module constant" : "assignment";
    }
    if (literal) {
      p.kind = PlaceKind::kWrite;
      p.value = value_of(entry["value"]);
      if (p.value->text == "None") {
        p.kind = PlaceKind::kRead;
        p.value.reset();
        p.note += " None";
      }
    } else if (role == "keyword") {
      return;  // a keyword passing a variable on is a read, recorded by the variable's reads
    } else {
      p.kind = PlaceKind::kDerived;
      p.note = "= " + entry.value("expr", std::string("?"));
    }
  }
  facts.places.push_back(std::move(p));
}

void add_model(const json& model, const std::string& file, ProjectFacts& facts) {
  for (const json& c : model.value("containers", json::array())) {
    if (c.value("element", "").empty()) continue;
    facts.containers.push_back(LayerContainer{
        file, c.value("class", ""), c.value("attr", ""), c.value("line", 0), c.value("kind", ""),
        c.value("element", ""), c.value("id_passed", false), c.value("keyed_by_id", false)});
    const LayerContainer& lc = facts.containers.back();
    Place ids = Place::at(file, lc.line, Setting::kLayerIds, PlaceKind::kDerived, Source::kCode,
                          config::Layer::kModel);
    ids.spelling = lc.attr;
    ids.note = lc.keyed_by_id ? lc.element + " blocks keyed by layer id"
               : lc.id_passed ? lc.element + " blocks given their layer id"
                              : lc.element + " blocks by position only";
    facts.places.push_back(std::move(ids));
  }
  for (const json& part : model.value("parts", json::array())) {
    facts.parts.push_back(ModelPart{file, part.value("class", ""), part.value("attr", ""),
                                    part.value("line", 0), part.value("role", ""),
                                    part.value("ctor", ""), part.value("staged", false)});
  }
  for (const json& clear : model.value("stage_clears", json::array())) {
    facts.stage_cleared_attrs.insert(clear.value("attr", ""));
  }
  for (const json& tie : model.value("ties", json::array())) {
    Place p = Place::at(file, tie.value("line", 0), Setting::kTiedWeights, PlaceKind::kDerived,
                        Source::kCode, config::Layer::kModel);
    p.note = tie.value("text", "");
    facts.places.push_back(std::move(p));
  }
}

void add_entry(const json& entry, const std::string& file, ProjectFacts& facts) {
  EntryFacts e{file,
               entry.value("main_line", json()).is_number() ? entry["main_line"].get<int>() : 0,
               entry.value("init_lines", std::vector<int>{})};
  facts.entries.push_back(std::move(e));
  for (const json& print : entry.value("prints", json::array())) {
    ConfigPrint cp{file, print.value("line", 0), {}, print.value("whole", false)};
    for (const json& name : print.value("names", json::array())) {
      if (auto s = find_setting(name.get<std::string>())) cp.settings.insert(*s);
    }
    if (cp.whole || !cp.settings.empty()) facts.prints.push_back(std::move(cp));
  }
}

}  // namespace

Errors read_python_facts(const std::string& helper_json, ProjectFacts& facts) {
  Errors errors;
  json doc = json::parse(helper_json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("files")) {
    errors.push_back(
        make_error(ErrorKind::kInfrastructure, "the Python reader printed no readable result"));
    return errors;
  }
  for (const json& f : doc["files"]) {
    const std::string file = f.value("path", "");
    if (f.contains("error")) {
      const json& err = f["error"];
      Error e = make_error(ErrorKind::kInput, err.value("message", "unreadable"),
                           "fix the file, or leave it out of the paths given to audit");
      e.file = file;
      e.line = err.value("line", 0);
      e.column = err.value("column", 0);
      errors.push_back(std::move(e));
      continue;
    }
    for (const json& entry : f.value("names", json::array())) add_place(entry, file, facts);
    for (const json& imp : f.value("imports", json::array())) {
      facts.references.push_back(FileReference{file, imp.value("line", 0), imp.value("module", ""),
                                               true, imp.value("level", 0), false});
    }
    for (const json& s : f.value("strings", json::array())) {
      facts.references.push_back(
          FileReference{file, s.value("line", 0), s.value("text", ""), false, 0, false});
    }
    add_model(f.value("model", json::object()), file, facts);
    add_entry(f.value("entry", json::object()), file, facts);
  }
  return errors;
}

}  // namespace bigmac::audit
