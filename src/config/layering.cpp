#include "config/layering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <tuple>

#include "config/constraints.h"
#include "config/schema.h"
#include "config/toml_source.h"
#include "config/value_parse.h"
#include "core/atomic_file.h"
#include "core/edit_distance.h"
#include "core/printable.h"
#include "core/utf8.h"

namespace bigmac::config {
namespace {

bool is_schema_table(std::string_view name) {
  for (std::string_view t : schema_tables()) {
    if (t == name) return true;
  }
  return false;
}

/// The schema table that holds `key`, if any ("micro_batch_size" -> "train").
const SchemaEntry* entry_named(std::string_view key) {
  for (const SchemaEntry& e : schema()) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::optional<std::string> suggest_key(std::string_view table, std::string_view key) {
  std::vector<std::string_view> names;
  for (const SchemaEntry& e : schema()) {
    if (table.empty() || e.table == table) names.push_back(e.key);
  }
  return closest_match(key, names);
}

std::string did_you_mean(const std::optional<std::string>& suggestion) {
  return suggestion ? fmt::format("did you mean '{}'?", *suggestion) : std::string();
}

Origin file_origin(const std::string& path, const toml::source_region& where) {
  return Origin{SourceKind::kFile, path, static_cast<int>(where.begin.line),
                static_cast<int>(where.begin.column)};
}

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

/// Why the probe is on for a trainer that leaves `probe` unset, or "" when it stays off: a
/// command whose program is a Python interpreter, a .py script, or torchrun running one.
std::string python_program(const TrainerSection& trainer) {
  if (trainer.kind != "command" || trainer.command.empty()) return {};
  const std::string& program = trainer.command.front();
  const std::string base = std::filesystem::path(program).filename().string();
  const bool interpreter =
      base.rfind("python", 0) == 0 &&
      base.find_first_not_of("0123456789.", std::string_view("python").size()) == std::string::npos;
  if (interpreter) return "the command runs " + base;
  if (ends_with(program, ".py")) return "the command is a Python script";
  if (base == "torchrun") {
    for (const std::string& arg : trainer.command) {
      if (ends_with(arg, ".py")) return "the command is torchrun running " + arg;
    }
  }
  return {};
}

}  // namespace

Layering::Layering() {
  for (const SchemaEntry& entry : schema()) {
    Value value = entry.get(config_);
    Origin origin{SourceKind::kDefault, "", 0, 0};
    settings_[entry.full_key()] =
        Setting{entry.full_key(), value, origin, {Assignment{value, origin}}};
  }
}

static bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool Layering::refuse_flawed(const std::string& key, const Value& value, const Origin& origin) {
  std::vector<const std::string*> strings;
  if (const auto* s = std::get_if<std::string>(&value)) strings.push_back(s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    for (const std::string& s : *list) strings.push_back(&s);
  }
  for (const std::string* s : strings) {
    const auto flaw = find_text_flaw(*s);
    if (!flaw) continue;
    add_error(located(key,
                      fmt::format("expected UTF-8 text, found {} at offset {} of \"{}\"",
                                  flaw->what, flaw->offset, printable(*s)),
                      origin,
                      "a rank is handed strings through its arguments and environment, which "
                      "end at a NUL and are read as UTF-8: write the text itself"));
    return true;
  }
  return false;
}

void Layering::assign_env(const std::string& name, std::string value, Origin origin) {
  if (refuse_flawed("trainer.env." + printable(name), Value{name}, origin) ||
      refuse_flawed("trainer.env." + printable(name), Value{value}, origin)) {
    return;
  }
  if (!valid_env_name(name)) {
    return add_error(located("trainer.env." + name,
                             fmt::format("'{}' is not an environment variable name", name), origin,
                             "use letters, digits and _, not starting with a digit"));
  }
  Setting& s = config_.trainer_env[name];
  s.key = "trainer.env." + name;
  s.value = value;
  s.origin = origin;
  s.assignments.push_back({Value{std::move(value)}, std::move(origin)});
}

void Layering::read_trainer_env(const std::string& path, const toml::node& node, const Origin& at) {
  const toml::table* table = node.as_table();
  if (!table) {
    return add_error(located("trainer.env", "expected a table of NAME = \"value\"", at,
                             "write [trainer.env] with one NAME = \"value\" per line"));
  }
  for (const auto& [key, value] : *table) {
    const Origin o = file_origin(path, key.source());
    const std::string name(key.str());
    if (auto text = value.value_exact<std::string>()) {
      assign_env(name, *text, o);
    } else if (value.is_number() || value.is_boolean()) {
      // An environment holds text: 1 and true are written as the user would quote them.
      assign_env(name, toml_value_text(value), o);
    } else {
      add_error(located("trainer.env." + name,
                        "expected a string (an environment variable's value)", o,
                        fmt::format("write {} = \"...\"", name)));
    }
  }
}

void Layering::assign(const SchemaEntry& entry, Value value, Origin origin) {
  if (refuse_flawed(entry.full_key(), value, origin)) return;
  Setting& s = settings_[entry.full_key()];
  s.value = value;
  s.origin = origin;
  s.assignments.push_back(Assignment{std::move(value), std::move(origin)});
}

Error Layering::located(std::string key, std::string message, const Origin& origin,
                        std::string hint, ErrorKind kind) const {
  Error e = make_error(kind, std::move(message), std::move(hint));
  e.key = std::move(key);
  locate(e, origin);
  return e;
}

void Layering::read_table(const std::string& path, const std::string& name, const toml::node& node,
                          const Origin& at) {
  const toml::table* table = node.as_table();
  if (!table) {
    add_error(located(name, fmt::format("expected a table [{}], found a value", name), at, {}));
    return;
  }
  for (const auto& [key_key, value_node] : *table) {
    const std::string key(key_key.str());
    const std::string full = name + "." + key;
    Origin key_at = file_origin(path, key_key.source());
    if (value_node.is_table() && is_schema_table(full)) {
      read_table(path, full, value_node, key_at);  // [launch.slurm]
    } else if (full == "trainer.env") {
      read_trainer_env(path, value_node, key_at);
    } else if (const SchemaEntry* entry = find_entry(name, key)) {
      auto value = value_from_toml(*entry, value_node);
      if (!value) {
        add_error(located(full, value.error(), key_at, {}));
      } else {
        assign(*entry, std::move(*value), key_at);
      }
    } else if (auto why = derived_explanation(key)) {
      add_error(located(full, std::string(*why), key_at, "remove this line"));
    } else if (const SchemaEntry* elsewhere = entry_named(key)) {
      add_error(located(full,
                        fmt::format("'{}' belongs in [{}] (the {} layer consumes it), not in [{}]",
                                    key, elsewhere->table, layer_name(elsewhere->layer), name),
                        key_at, fmt::format("move it to [{}]", elsewhere->table)));
    } else {
      add_error(located(full, fmt::format("unknown key '{}' in [{}]", key, name), key_at,
                        did_you_mean(suggest_key(name, key))));
    }
  }
}

void Layering::read_file(const std::string& path) {
  auto text = bigmac::read_file(path);
  if (!text) {
    Error e = text.error();
    e.kind = ErrorKind::kConfig;
    add_error(std::move(e));
    return;
  }
  auto root = parse_toml_text(*text, path);
  if (!root) return add_error(root.error());

  for (const auto& [name_key, node] : *root) {
    const std::string name(name_key.str());
    Origin at = file_origin(path, name_key.source());
    if (is_schema_table(name)) {
      read_table(path, name, node, at);
    } else if (name == "logs") {
      const toml::table* logs = node.as_table();
      const toml::table* fields = logs ? (*logs)["fields"].as_table() : nullptr;
      if (!logs || (logs->contains("fields") && !fields)) {
        add_error(located(logs ? "logs.fields" : "logs",
                          "expected a table [logs.fields] of field = \"regex\" lines", at, {}));
        continue;
      }
      if (logs) {
        for (const auto& [key_key, value_node] : *logs) {
          if (key_key.str() != "fields") {
            add_error(located("logs." + std::string(key_key.str()), "unknown key in [logs]",
                              file_origin(path, key_key.source()),
                              "[logs.fields] maps a field name to a regex with one capture"));
          }
        }
      }
      if (!fields) continue;
      for (const auto& [field, pattern] : *fields) {
        if (auto p = pattern.value_exact<std::string>()) {
          if (refuse_flawed("logs.fields." + std::string(field.str()), Value{*p},
                            file_origin(path, field.source()))) {
            continue;
          }
          config_.log_fields[std::string(field.str())] = *p;
          config_.log_field_origins[std::string(field.str())] = file_origin(path, field.source());
        } else {
          add_error(located("logs.fields." + std::string(field.str()), "expected a regex string",
                            file_origin(path, field.source()), {}));
        }
      }
    } else if (name == "gates") {
      const toml::table* gates = node.as_table();
      if (!gates) {
        add_error(located(name, "expected tables [gates.<id>], found a value", at,
                          "write overrides as [gates.dp] followed by key = value lines"));
        continue;
      }
      for (const auto& [gate_key, gate_node] : *gates) {
        const std::string gate(gate_key.str());
        Origin gate_at = file_origin(path, gate_key.source());
        // Which gates exist is the gate files' to say (gates::GateCatalog checks the id).
        const toml::table* overrides = gate_node.as_table();
        if (!overrides) {
          add_error(located("gates." + gate,
                            fmt::format("expected a table [gates.{}], found a value", gate),
                            gate_at, fmt::format("write [gates.{}] and key = value lines", gate)));
          continue;
        }
        for (const auto& [k, v] : *overrides) {
          Origin o = file_origin(path, k.source());
          Value value = value_from_free_toml(v);
          if (refuse_flawed("gates." + gate + "." + std::string(k.str()), value, o)) continue;
          config_.gate_overrides[gate][std::string(k.str())] =
              Setting{"gates." + gate + "." + std::string(k.str()), value, o, {{value, o}}};
        }
      }
    } else if (auto why = derived_explanation(name)) {
      add_error(located(name, std::string(*why), at, "remove this line"));
    } else if (const SchemaEntry* entry = entry_named(name)) {
      add_error(located(
          name, fmt::format("'{}' must be inside a table: it belongs in [{}]", name, entry->table),
          at, fmt::format("move it under [{}]", entry->table)));
    } else {
      std::vector<std::string_view> tables(schema_tables().begin(), schema_tables().end());
      tables.push_back("logs");
      tables.push_back("gates");
      add_error(located(name, fmt::format("unknown table or key '{}'", name), at,
                        did_you_mean(closest_match(name, tables))));
    }
  }
}

void Layering::read_env(const std::map<std::string, std::string>& env) {
  for (const SchemaEntry& entry : schema()) {
    auto it = env.find(entry.env_name());
    if (it == env.end()) continue;
    Origin origin{SourceKind::kEnv, "$" + it->first, 0, 0};
    auto value = value_from_text(entry, it->second);
    if (!value) {
      add_error(located(entry.full_key(), value.error(), origin, {}));
    } else {
      assign(entry, std::move(*value), origin);
    }
  }
}

void Layering::read_override(std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  Origin origin{SourceKind::kCommandLine, printable(assignment), 0, 0};
  // One value per --set: the tail of `--set 'train.seed=1<newline>train.max_steps=3'` was
  // dropped without a word.
  if (const std::size_t brk = assignment.find_first_of("\r\n"); brk != std::string_view::npos) {
    return add_error(located(std::string(assignment.substr(0, std::min(eq, brk))),
                             fmt::format("--set holds a line break: '{}'", printable(assignment)),
                             origin, "give one table.key=value per --set; repeat --set for more",
                             ErrorKind::kUsage));
  }
  if (eq == std::string_view::npos || eq == 0) {
    return add_error(located({},
                             fmt::format("--set expects table.key=value, found '{}'", assignment),
                             origin, "for example --set train.seed=7", ErrorKind::kUsage));
  }
  const std::string key(assignment.substr(0, eq));
  const std::string_view text = assignment.substr(eq + 1);
  const std::size_t dot = key.find('.');
  const std::string table = key.substr(0, dot);
  const std::string rest = dot == std::string::npos ? std::string() : key.substr(dot + 1);

  if (table == "gates") {
    const std::size_t dot2 = rest.find('.');
    const std::string gate = rest.substr(0, dot2);
    // The gate id itself is checked against the gate files (gates::GateCatalog).
    if (dot2 == std::string::npos || gate.empty() || dot2 + 1 == rest.size()) {
      return add_error(located(key, fmt::format("expected gates.<gate>.<key>, found '{}'", key),
                               origin, "for example --set gates.dp.loss_rel_tol=0.01",
                               ErrorKind::kUsage));
    }
    Value value = value_from_free_text(text);
    if (refuse_flawed(key, value, origin)) return;
    Setting& s = config_.gate_overrides[gate][rest.substr(dot2 + 1)];
    s.key = key;
    s.value = value;
    s.origin = origin;
    s.assignments.push_back({value, origin});
    return;
  }
  if (table == "trainer" && rest.rfind("env.", 0) == 0) {
    std::string value(text);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    return assign_env(rest.substr(4), std::move(value), origin);
  }
  if (table == "logs" && rest.rfind("fields.", 0) == 0) {
    if (refuse_flawed(key, Value{std::string(text)}, origin)) return;
    config_.log_fields[rest.substr(7)] = std::string(text);
    config_.log_field_origins[rest.substr(7)] = origin;
    return;
  }
  const SchemaEntry* entry = find_entry(table, rest);
  for (const SchemaEntry& e : schema()) {
    if (!entry && e.full_key() == key) entry = &e;  // launch.slurm.partition
  }
  if (entry) {
    auto value = value_from_text(*entry, text);
    if (!value) return add_error(located(key, value.error(), origin, {}, ErrorKind::kConfig));
    return assign(*entry, std::move(*value), origin);
  }
  if (auto why = derived_explanation(rest.empty() ? table : rest)) {
    return add_error(located(key, std::string(*why), origin, {}, ErrorKind::kConfig));
  }
  std::vector<std::string> full_keys;
  for (const SchemaEntry& e : schema()) full_keys.push_back(e.full_key());
  std::vector<std::string_view> views(full_keys.begin(), full_keys.end());
  add_error(located(key, fmt::format("unknown key '{}'", key), origin,
                    did_you_mean(closest_match(key, views)), ErrorKind::kConfig));
}

tl::expected<Config, Errors> Layering::finish() && {
  SettingTable table;
  // `probe` left unset follows the program: on for Python (docs/probe.md), off otherwise.
  if (Setting& probe = settings_.at("trainer.probe"); probe.origin.kind == SourceKind::kDefault) {
    TrainerSection trainer;
    trainer.kind = std::get<std::string>(settings_.at("trainer.kind").value);
    trainer.command = std::get<std::vector<std::string>>(settings_.at("trainer.command").value);
    if (std::string why = python_program(trainer); !why.empty()) {
      probe.value = true;
      probe.origin = Origin{SourceKind::kDerived, why + "; set probe = false to turn it off", 0, 0};
      probe.assignments = {{probe.value, probe.origin}};
    }
  }
  for (const SchemaEntry& entry : schema()) {
    Setting& s = settings_.at(entry.full_key());
    entry.set(config_, s.value);
    table.entries.push_back(std::move(s));
  }
  config_.settings = std::move(table);
  derive(config_);
  // Constraints are checked even after other errors (a rejected value keeps its default), so
  // one run of `config check` shows everything there is to fix.
  Errors violations = check_constraints(config_);
  errors_.insert(errors_.end(), violations.begin(), violations.end());
  if (!errors_.empty()) {
    std::stable_sort(errors_.begin(), errors_.end(), [](const Error& a, const Error& b) {
      return std::tie(a.file, a.line, a.column) < std::tie(b.file, b.line, b.column);
    });
    return tl::unexpected(std::move(errors_));
  }
  return std::move(config_);
}

Error error_at_setting(const SettingTable& table, std::string_view key, std::string message,
                       std::string hint) {
  Error e = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
  e.key = std::string(key);
  if (const Setting* s = table.find(key)) locate(e, s->origin);
  return e;
}

}  // namespace bigmac::config
