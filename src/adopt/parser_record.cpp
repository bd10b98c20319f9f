#include "adopt/parser_record.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json_file.h"

namespace bigmac::adopt {
namespace {

using nlohmann::json;

std::optional<std::string> default_text(const json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number_float()) return json_text(value);  // the shortest text that reads back
  if (value.is_string()) return value.get<std::string>();
  return std::nullopt;
}

ParserAction action_of(const json& a) {
  ParserAction action;
  action.dest = a.value("dest", "");
  for (const json& o : a.value("options", json::array())) {
    if (o.is_string()) action.options.push_back(o.get<std::string>());
  }
  const json& nargs = a.contains("nargs") ? a.at("nargs") : json();
  if (nargs.is_null()) action.words = 1;
  if (nargs.is_number_unsigned()) action.words = nargs.get<std::size_t>();
  action.takes_value = a.value("takes_value", false);
  action.store = a.value("store", false);
  action.type =
      a.contains("type") && a.at("type").is_string() ? a.at("type").get<std::string>() : "";
  if (a.contains("default")) action.default_text = default_text(a.at("default"));
  return action;
}

// The settings a gate hands over as a number: the ones worth adding from a parser.
bool handed_number(ArgumentRole role) {
  switch (role) {
    case ArgumentRole::kSeed:
    case ArgumentRole::kMicroBatchSize:
    case ArgumentRole::kGradAccum:
    case ArgumentRole::kSeqLength:
    case ArgumentRole::kLr:
      return true;
    default:
      return false;
  }
}

std::optional<ArgumentRole> role_of_action(const ParserAction& action) {
  if (auto role = role_of_flag("--" + action.dest)) return role;
  for (const std::string& o : action.options) {
    if (auto role = role_of_flag(o)) return role;
  }
  return std::nullopt;
}

bool is_option_word(const std::string& word) {
  if (word.size() < 2 || word.front() != '-') return false;
  const char next = word[1];
  return !(std::isdigit(static_cast<unsigned char>(next)) || next == '.');  // `-3`, `-.5`
}

// An action's value in the command: (index of its word, the value, joined `--o=v`).
struct Occurrence {
  const ParserAction* action;
  std::size_t index;
  bool joined;
  std::string flag;
};

struct Walk {
  std::vector<Occurrence> found;
  std::vector<std::string> unknown;  ///< option words no action spells exactly (abbreviations)
};

// argparse's own walk, for plain cases: options by their exact spelling (`--o v`, `--o=v`),
// positional words in order. It stops assigning positionals at the first word it cannot place
// for certain (an abbreviation, a short cluster, a variable nargs).
Walk walk(const ParserRecord& record, const std::vector<std::string>& words, std::size_t first) {
  std::vector<const ParserAction*> positionals;
  for (const ParserAction& a : record.actions) {
    if (a.options.empty()) positionals.push_back(&a);
  }
  auto option = [&](const std::string& spelling) -> const ParserAction* {
    for (const ParserAction& a : record.actions) {
      if (std::find(a.options.begin(), a.options.end(), spelling) != a.options.end()) return &a;
    }
    return nullptr;
  };
  Walk out;
  std::size_t next_positional = 0;
  bool positionals_known = true;
  bool only_positionals = false;
  for (std::size_t i = first; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!only_positionals && word == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && is_option_word(word)) {
      const std::size_t eq = word.find('=');
      const std::string spelling = eq == std::string::npos ? word : word.substr(0, eq);
      const ParserAction* a = option(spelling);
      if (!a) {
        out.unknown.push_back(spelling);
        positionals_known = false;  // its words are unknown: later positionals are too
        continue;
      }
      if (!a->takes_value || eq != std::string::npos) {
        if (eq != std::string::npos) out.found.push_back({a, i, true, spelling});
        continue;
      }
      if (!a->words) {
        positionals_known = false;
        continue;
      }
      if (*a->words == 1 && i + 1 < words.size()) out.found.push_back({a, i + 1, false, spelling});
      i += *a->words;
      continue;
    }
    if (!positionals_known || next_positional >= positionals.size()) continue;
    const ParserAction* p = positionals[next_positional++];
    if (!p->words) {
      positionals_known = false;
      continue;
    }
    if (*p->words == 1) out.found.push_back({p, i, false, p->dest});
    i += *p->words - (*p->words > 0 ? 1 : 0);
  }
  return out;
}

}  // namespace

std::optional<ParserRecord> read_parser_record(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  ParserRecord record;
  for (const json& w : doc.value("argv", json::array())) {
    if (!w.is_string()) return std::nullopt;
    record.argv.push_back(w.get<std::string>());
  }
  for (const json& a : doc.value("actions", json::array())) {
    if (a.is_object()) record.actions.push_back(action_of(a));
  }
  if (record.argv.empty()) return std::nullopt;
  return record;
}

void recognise_with_parser(const ParserRecord& record, std::vector<std::string>& command,
                           std::vector<RecognisedArgument>& arguments) {
  // sys.argv[1:] is the command's tail (`python3 train.py ARGS`, `python3 -m pkg ARGS`).
  const std::size_t tail = record.argv.size() - 1;
  if (command.size() < tail + 1 ||
      !std::equal(record.argv.begin() + 1, record.argv.end(), command.end() - tail)) {
    return;
  }
  auto has = [&](ArgumentRole role) {
    return std::any_of(arguments.begin(), arguments.end(),
                       [&](const RecognisedArgument& a) { return a.role == role; });
  };
  const Walk seen = walk(record, command, command.size() - tail);
  std::vector<const ParserAction*> present;
  for (const Occurrence& o : seen.found) {
    present.push_back(o.action);
    const auto role = role_of_action(*o.action);
    if (!role || !handed_number(*role) || has(*role)) continue;
    const std::string value =
        o.joined ? command[o.index].substr(command[o.index].find('=') + 1) : command[o.index];
    if (!value_fits(*role, value)) continue;
    arguments.push_back({*role, o.flag, value, o.index, o.joined,
                         o.action->options.empty() ? FoundBy::kPositional : FoundBy::kSpelling});
  }
  for (const ParserAction& a : record.actions) {
    if (a.options.empty() || !a.store || a.words != std::optional<std::size_t>(1) ||
        !a.default_text || (a.type != "int" && a.type != "float")) {
      continue;
    }
    if (std::find(present.begin(), present.end(), &a) != present.end()) continue;
    // `--batch 16` is argparse's abbreviation of `--batch_size`: it is given already.
    const bool abbreviated =
        std::any_of(seen.unknown.begin(), seen.unknown.end(), [&](const std::string& u) {
          return std::any_of(a.options.begin(), a.options.end(),
                             [&](const std::string& o) { return o.rfind(u, 0) == 0; });
        });
    if (abbreviated) continue;
    const auto role = role_of_action(a);
    if (!role || !handed_number(*role) || has(*role) || !value_fits(*role, *a.default_text))
      continue;
    if (*role != ArgumentRole::kLr && a.type != "int") continue;
    // The long spelling, as a user would write it.
    const std::string flag = *std::max_element(
        a.options.begin(), a.options.end(),
        [](const std::string& x, const std::string& y) { return x.size() < y.size(); });
    command.push_back(flag);
    command.push_back(*a.default_text);
    arguments.push_back(
        {*role, flag, *a.default_text, command.size() - 1, false, FoundBy::kDefault});
  }
  std::sort(arguments.begin(), arguments.end(),
            [](const RecognisedArgument& x, const RecognisedArgument& y) {
              return x.value_index < y.value_index;
            });
}

}  // namespace bigmac::adopt
