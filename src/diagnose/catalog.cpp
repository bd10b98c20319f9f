#include "diagnose/catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <set>

#include "core/edit_distance.h"
#include "diagnose/log_context.h"
#include "diagnose/message_template.h"
#include "diagnose/metric_rules.h"

namespace bigmac::diagnose {

// Defined in the generated catalog_text.cpp (stages/diagnoses.toml at build time).
extern const char* const kBuiltinCatalogText;

namespace {

constexpr std::array<std::string_view, 14> kSignatureKeys = {
    "id",  "class",    "gate",         "specificity", "confidence", "symptom", "cause",
    "fix", "patterns", "rank_capture", "fallback",    "follow",     "when",    "comment"};
constexpr std::array<std::string_view, 7> kWhenKeys = {"context", "gate", "confidence", "symptom",
                                                       "cause",   "fix",  "comment"};
constexpr std::array<std::string_view, 9> kRuleKeys = {
    "id", "class", "gate", "specificity", "confidence", "symptom", "cause", "fix", "comment"};

// Parses catalog entries, keeping the DataFile for positions.
class CatalogReader {
 public:
  explicit CatalogReader(const config::DataFile& file) : file_(file) {}

  Expected<Catalog> read() {
    Catalog catalog;
    catalog.path = file_.path;
    for (const auto& [key, value] : file_.root.items()) {
      if (key != "signature" && key != "rule" && key != "class" && key != "ending") {
        return tl::unexpected(
            error(key, fmt::format("unknown table `{}`", key),
                  "the catalog holds [[signature]], [[rule]] and [[class]] entries and [ending]"));
      }
      if (key == "ending") continue;
      if (!value.is_array()) {
        return tl::unexpected(error(key, fmt::format("`{}` must be an array of tables", key),
                                    fmt::format("write [[{}]]", key)));
      }
    }
    std::set<std::string> ids;
    if (auto it = file_.root.find("signature"); it != file_.root.end()) {
      for (std::size_t i = 0; i < it->size(); ++i) {
        auto sig = read_signature((*it)[i], fmt::format("signature[{}]", i));
        if (!sig) return tl::unexpected(sig.error());
        if (!ids.insert(sig->text.id).second) {
          return tl::unexpected(duplicate(fmt::format("signature[{}].id", i), sig->text.id));
        }
        catalog.signatures.push_back(std::move(*sig));
      }
    }
    if (auto it = file_.root.find("rule"); it != file_.root.end()) {
      for (std::size_t i = 0; i < it->size(); ++i) {
        auto rule = read_rule((*it)[i], fmt::format("rule[{}]", i));
        if (!rule) return tl::unexpected(rule.error());
        if (!ids.insert(rule->text.id).second) {
          return tl::unexpected(duplicate(fmt::format("rule[{}].id", i), rule->text.id));
        }
        catalog.rules.push_back(std::move(*rule));
      }
    }
    if (auto ok = read_classes(catalog); !ok) return tl::unexpected(ok.error());
    return catalog;
  }

 private:
  Error error(const std::string& key, std::string message, std::string hint = {}) const {
    return file_.error_at(key, std::move(message), std::move(hint));
  }

  Error duplicate(const std::string& key, const std::string& id) const {
    return error(key, fmt::format("entry `{}` is defined twice", id), "ids must be unique");
  }

  // Rejects keys the entry does not know, suggesting the closest known one.
  template <std::size_t N>
  Expected<void> check_keys(const nlohmann::json& entry, const std::string& at,
                            const std::array<std::string_view, N>& known) const {
    for (const auto& [key, value] : entry.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string hint = fmt::format("known keys: {}", fmt::join(known, ", "));
      if (auto near = closest_match(key, std::span<const std::string_view>(known))) {
        hint = fmt::format("did you mean `{}`?", *near);
      }
      return tl::unexpected(error(at + "." + key, fmt::format("unknown key `{}`", key), hint));
    }
    return {};
  }

  Expected<std::string> string_at(const nlohmann::json& entry, const std::string& at,
                                  const char* key, bool required) const {
    auto it = entry.find(key);
    if (it == entry.end()) {
      if (!required) return std::string();
      return tl::unexpected(error(at, fmt::format("entry lacks `{}`", key)));
    }
    if (!it->is_string() || (required && it->get<std::string>().empty())) {
      return tl::unexpected(
          error(at + "." + key, fmt::format("`{}` must be a non-empty string", key)));
    }
    return it->get<std::string>();
  }

  // An entry's optional `confidence`, 0..1; `what` names the entry in the error.
  Expected<std::optional<double>> read_confidence(const nlohmann::json& entry,
                                                  const std::string& at,
                                                  const std::string& what) const {
    auto it = entry.find("confidence");
    if (it == entry.end()) return std::optional<double>();
    if (!it->is_number() || *it < 0.0 || *it > 1.0) {
      return tl::unexpected(
          error(at + ".confidence", fmt::format("{}: confidence must be a number 0..1", what)));
    }
    return std::optional<double>(it->get<double>());
  }

  Expected<EntryText> read_text(const nlohmann::json& entry, const std::string& at) const {
    if (!entry.is_object()) return tl::unexpected(error(at, "an entry must be a table"));
    EntryText text;
    if (auto p = file_.positions.find(at + ".id"); p != file_.positions.end()) {
      text.line = p->second.line;
    }
    const std::pair<const char*, std::string*> strings[] = {
        {"id", &text.id},           {"class", &text.klass}, {"gate", &text.gate},
        {"symptom", &text.symptom}, {"cause", &text.cause}, {"fix", &text.fix}};
    for (const auto& [key, target] : strings) {
      auto value = string_at(entry, at, key, true);
      if (!value) return tl::unexpected(value.error());
      *target = std::move(*value);
    }
    if (auto it = entry.find("specificity"); it != entry.end()) {
      if (!it->is_number_integer() || *it < 1 || *it > 100) {
        return tl::unexpected(
            error(at + ".specificity",
                  fmt::format("entry `{}`: specificity must be an integer 1..100", text.id)));
      }
      text.specificity = it->get<int>();
    }
    auto confidence = read_confidence(entry, at, fmt::format("entry `{}`", text.id));
    if (!confidence) return tl::unexpected(confidence.error());
    text.confidence = confidence->value_or(text.confidence);
    return text;
  }

  // Checks that every placeholder of the entry's texts is in `defined`.
  Expected<void> check_placeholders(const EntryText& text, const std::string& at,
                                    const std::set<std::string, std::less<>>& defined,
                                    const std::string& what) const {
    const std::pair<const char*, const std::string*> texts[] = {
        {"symptom", &text.symptom}, {"cause", &text.cause}, {"fix", &text.fix}};
    for (const auto& [key, value] : texts) {
      auto names = template_placeholders(*value);
      if (!names) {
        return tl::unexpected(
            error(at + "." + key, fmt::format("entry `{}`: {}: {}", text.id, key, names.error())));
      }
      for (const std::string& name : *names) {
        if (defined.count(name) == 0) {
          return tl::unexpected(
              error(at + "." + key,
                    fmt::format("entry `{}`: {} uses `{{{}}}`, which {}", text.id, key, name, what),
                    defined.empty() ? "this entry provides no values"
                                    : fmt::format("available: {}", fmt::join(defined, ", "))));
        }
      }
    }
    return {};
  }

  Expected<std::vector<std::string>> read_patterns(const nlohmann::json& list,
                                                   const std::string& at,
                                                   const std::string& id) const {
    if (!list.is_array() || list.empty()) {
      return tl::unexpected(
          error(at, fmt::format("entry `{}`: `patterns` must be a non-empty list of strings", id)));
    }
    std::vector<std::string> patterns;
    for (std::size_t j = 0; j < list.size(); ++j) {
      const std::string key = fmt::format("{}[{}]", at, j);
      if (!list[j].is_string()) {
        return tl::unexpected(
            error(key, fmt::format("entry `{}`: a pattern must be a string", id)));
      }
      RE2::Options options;
      options.set_log_errors(false);
      RE2 re(list[j].get<std::string>(), options);
      if (!re.ok()) {
        return tl::unexpected(
            error(key, fmt::format("entry `{}`: pattern does not compile: {}", id, re.error()),
                  "patterns are RE2 syntax (no look-around or back-references)"));
      }
      patterns.push_back(list[j].get<std::string>());
    }
    return patterns;
  }

  Expected<Signature> read_signature(const nlohmann::json& entry, const std::string& at) const {
    auto text = read_text(entry, at);
    if (!text) return tl::unexpected(text.error());
    if (auto ok = check_keys(entry, at, kSignatureKeys); !ok) return tl::unexpected(ok.error());
    Signature sig;
    sig.text = std::move(*text);
    auto patterns_it = entry.find("patterns");
    if (patterns_it == entry.end()) {
      return tl::unexpected(error(at, fmt::format("entry `{}` lacks `patterns`", sig.text.id)));
    }
    auto patterns = read_patterns(*patterns_it, at + ".patterns", sig.text.id);
    if (!patterns) return tl::unexpected(patterns.error());
    sig.patterns = std::move(*patterns);
    auto rank_capture = string_at(entry, at, "rank_capture", false);
    if (!rank_capture) return tl::unexpected(rank_capture.error());
    sig.rank_capture = std::move(*rank_capture);
    if (auto it = entry.find("fallback"); it != entry.end()) {
      if (!it->is_boolean())
        return tl::unexpected(error(at + ".fallback", "`fallback` must be true or false"));
      sig.fallback = it->get<bool>();
    }
    if (auto it = entry.find("follow"); it != entry.end()) {
      auto follow = read_follow(*it, at + ".follow", sig.text.id);
      if (!follow) return tl::unexpected(follow.error());
      sig.follow = std::move(*follow);
    }

    // A placeholder must be defined by every pattern (so every match can fill it) or by a
    // follow pattern (optional lines; missing values print as `?`).
    std::set<std::string, std::less<>> defined;
    bool first = true;
    for (const std::string& pattern : sig.patterns) {
      RE2 re(pattern);
      std::set<std::string, std::less<>> mine;
      for (int n = 1; n <= re.NumberOfCapturingGroups(); ++n) mine.insert(std::to_string(n));
      for (const auto& [name, index] : re.NamedCapturingGroups()) mine.insert(name);
      if (first) {
        defined = std::move(mine);
        first = false;
      } else {
        std::set<std::string, std::less<>> both;
        std::set_intersection(defined.begin(), defined.end(), mine.begin(), mine.end(),
                              std::inserter(both, both.end()));
        defined = std::move(both);
      }
    }
    for (const std::string& pattern : sig.follow.patterns) {
      RE2 re(pattern);
      for (const auto& [name, index] : re.NamedCapturingGroups()) defined.insert(name);
    }
    if (auto ok =
            check_placeholders(sig.text, at, defined, "not every pattern of the entry captures");
        !ok) {
      return tl::unexpected(ok.error());
    }
    if (auto it = entry.find("when"); it != entry.end()) {
      auto when = read_when(*it, at + ".when", sig.text, defined, "signature");
      if (!when) return tl::unexpected(when.error());
      sig.when = std::move(*when);
    }
    if (!sig.rank_capture.empty() && defined.count(sig.rank_capture) == 0) {
      return tl::unexpected(
          error(at + ".rank_capture",
                fmt::format("entry `{}`: rank_capture `{}` is not captured by every pattern",
                            sig.text.id, sig.rank_capture)));
    }
    return sig;
  }

  // `[[signature.when]]` (and `[[class.when]]`): other words where the log shows a context;
  // their placeholders are the signature's (a class's words have none).
  Expected<std::vector<SignatureVariant>> read_when(
      const nlohmann::json& list, const std::string& at, const EntryText& base,
      const std::set<std::string, std::less<>>& defined, std::string_view table) const {
    if (!list.is_array()) {
      return tl::unexpected(error(at,
                                  fmt::format("entry `{}`: `when` must be an array of "
                                              "tables",
                                              base.id),
                                  fmt::format("write [[{}.when]]", table)));
    }
    std::vector<SignatureVariant> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string key = fmt::format("{}[{}]", at, i);
      const nlohmann::json& entry = list[i];
      if (!entry.is_object()) return tl::unexpected(error(key, "an entry must be a table"));
      if (auto ok = check_keys(entry, key, kWhenKeys); !ok) return tl::unexpected(ok.error());
      SignatureVariant v;
      if (auto p = file_.positions.find(key + ".context"); p != file_.positions.end()) {
        v.line = p->second.line;
      }
      auto context = string_at(entry, key, "context", true);
      if (!context) return tl::unexpected(context.error());
      const auto names = context_names();
      const bool variable = context->starts_with("set:NCCL_") && context->size() > 9;
      if (!variable && std::find(names.begin(), names.end(), *context) == names.end()) {
        auto near = closest_match(*context, names);
        return tl::unexpected(error(
            key + ".context", fmt::format("entry `{}`: unknown context `{}`", base.id, *context),
            near ? fmt::format("did you mean `{}`?", *near)
                 : fmt::format("contexts: {}, or set:NCCL_<NAME>", fmt::join(names, ", "))));
      }
      v.context = std::move(*context);
      EntryText words = base;  // for the placeholder check
      const std::pair<const char*, std::optional<std::string>*> fields[] = {
          {"gate", &v.gate}, {"symptom", &v.symptom}, {"cause", &v.cause}, {"fix", &v.fix}};
      for (const auto& [name, target] : fields) {
        if (entry.find(name) == entry.end()) continue;
        auto value = string_at(entry, key, name, true);
        if (!value) return tl::unexpected(value.error());
        *target = std::move(*value);
      }
      auto confidence = read_confidence(entry, key, fmt::format("entry `{}`", base.id));
      if (!confidence) return tl::unexpected(confidence.error());
      v.confidence = *confidence;
      words.symptom = v.symptom.value_or("");
      words.cause = v.cause.value_or("");
      words.fix = v.fix.value_or("");
      if (auto ok =
              check_placeholders(words, key, defined, "not every pattern of the entry captures");
          !ok) {
        return tl::unexpected(ok.error());
      }
      out.push_back(std::move(v));
    }
    return out;
  }

  Expected<FollowSpec> read_follow(const nlohmann::json& entry, const std::string& at,
                                   const std::string& id) const {
    if (!entry.is_object()) return tl::unexpected(error(at, "`follow` must be a table"));
    FollowSpec follow;
    auto within = entry.find("within");
    if (within == entry.end() || !within->is_number_integer() || *within < 1 || *within > 100) {
      return tl::unexpected(
          error(at, fmt::format("entry `{}`: follow.within must be an integer 1..100", id)));
    }
    follow.within = within->get<int>();
    auto patterns = entry.find("patterns");
    if (patterns == entry.end()) {
      return tl::unexpected(error(at, fmt::format("entry `{}`: follow lacks `patterns`", id)));
    }
    auto list = read_patterns(*patterns, at + ".patterns", id);
    if (!list) return tl::unexpected(list.error());
    follow.patterns = std::move(*list);
    return follow;
  }

  Expected<RuleText> read_rule(const nlohmann::json& entry, const std::string& at) const {
    auto text = read_text(entry, at);
    if (!text) return tl::unexpected(text.error());
    if (auto ok = check_keys(entry, at, kRuleKeys); !ok) return tl::unexpected(ok.error());
    const auto specs = metric_rule_specs();
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const MetricRuleSpec& s) { return s.id == text->id; });
    if (spec == specs.end()) {
      std::vector<std::string_view> ids;
      for (const MetricRuleSpec& s : specs) ids.push_back(s.id);
      auto near = closest_match(text->id, ids);
      return tl::unexpected(error(at + ".id", fmt::format("no metric rule is named `{}`", text->id),
                                  near ? fmt::format("did you mean `{}`?", *near)
                                       : "rules are implemented in src/diagnose/metric_rules.cpp"));
    }
    std::set<std::string, std::less<>> defined(spec->values.begin(), spec->values.end());
    if (auto ok = check_placeholders(*text, at, defined, "this rule does not provide"); !ok) {
      return tl::unexpected(ok.error());
    }
    return RuleText{std::move(*text)};
  }

  // A list of check names (`explains`), whose validity against the gates' registry the
  // catalog test asserts (diagnose/ does not know the gates).
  Expected<std::vector<std::string>> read_checks(const nlohmann::json& entry,
                                                 const std::string& at) const {
    auto it = entry.find("explains");
    if (it == entry.end()) return std::vector<std::string>{};
    std::vector<std::string> checks;
    if (it->is_array()) {
      for (const auto& check : *it) {
        if (!check.is_string() || check.get<std::string>().empty()) break;
        checks.push_back(check.get<std::string>());
      }
    }
    if (!it->is_array() || checks.size() != it->size()) {
      return tl::unexpected(error(at + ".explains", "`explains` must be a list of check names",
                                  "for example explains = [\"loss_vs_baseline\"]"));
    }
    return checks;
  }

  Expected<void> read_classes(Catalog& catalog) const {
    if (auto it = file_.root.find("ending"); it != file_.root.end()) {
      if (!it->is_object()) return tl::unexpected(error("ending", "`ending` must be a table"));
      for (const auto& [key, value] : it->items()) {
        if (key != "explains" && key != "comment") {
          return tl::unexpected(error("ending." + key, fmt::format("unknown key `{}`", key),
                                      "[ending] holds `explains`"));
        }
      }
      auto checks = read_checks(*it, "ending");
      if (!checks) return tl::unexpected(checks.error());
      catalog.ending_explains = std::move(*checks);
      if (auto p = file_.positions.find("ending.explains"); p != file_.positions.end()) {
        catalog.ending_line = p->second.line;
      }
    }
    auto it = file_.root.find("class");
    if (it == file_.root.end()) return {};
    std::set<std::string, std::less<>> named;  // the classes entries use
    for (const Signature& s : catalog.signatures) named.insert(s.text.klass);
    for (const RuleText& r : catalog.rules) named.insert(r.text.klass);
    static constexpr std::array<std::string_view, 9> kClassKeys = {
        "id", "kind", "explains", "gate", "confidence", "cause", "fix", "when", "comment"};
    for (std::size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& entry = (*it)[i];
      const std::string at = fmt::format("class[{}]", i);
      if (!entry.is_object()) return tl::unexpected(error(at, "an entry must be a table"));
      if (auto ok = check_keys(entry, at, kClassKeys); !ok) return tl::unexpected(ok.error());
      ClassSpec spec;
      auto id = string_at(entry, at, "id", true);
      if (!id) return tl::unexpected(id.error());
      spec.id = std::move(*id);
      if (auto p = file_.positions.find(at + ".id"); p != file_.positions.end()) {
        spec.line = p->second.line;
      }
      if (auto words = read_words(entry, at, spec); !words) return tl::unexpected(words.error());
      if (auto w = entry.find("when"); w != entry.end()) {
        if (spec.cause.empty()) {
          return tl::unexpected(error(
              at + ".when",
              fmt::format("class `{}`: `when` without the class's own words", spec.id),
              "give the class gate, cause and fix: `when` replaces some of them in a context"));
        }
        EntryText base;
        base.id = spec.id;
        base.gate = spec.gate;
        base.cause = spec.cause;
        base.fix = spec.fix;
        auto when = read_when(*w, at + ".when", base, {}, "class");
        if (!when) return tl::unexpected(when.error());
        spec.when = std::move(*when);
      }
      // A class with words for messages may be named by messages alone.
      if (named.count(spec.id) == 0 && spec.cause.empty()) {
        std::vector<std::string_view> ids(named.begin(), named.end());
        auto near = closest_match(spec.id, ids);
        return tl::unexpected(error(
            at + ".id", fmt::format("class `{}` is the class of no signature or rule", spec.id),
            near ? fmt::format("did you mean `{}`?", *near) : "a class is named by its entries"));
      }
      if (catalog.class_spec(spec.id) != nullptr) {
        return tl::unexpected(duplicate(at + ".id", spec.id));
      }
      auto kind = string_at(entry, at, "kind", false);
      if (!kind) return tl::unexpected(kind.error());
      if (!kind->empty() && *kind != "ending" && *kind != "records") {
        return tl::unexpected(
            error(at + ".kind", fmt::format("class `{}`: unknown kind `{}`", spec.id, *kind),
                  "kind is \"ending\" (a rank ended; the default) or \"records\""));
      }
      spec.ends_a_rank = *kind != "records";
      auto checks = read_checks(entry, at);
      if (!checks) return tl::unexpected(checks.error());
      spec.explains = std::move(*checks);
      catalog.classes.push_back(std::move(spec));
    }
    return {};
  }

  // `gate`, `confidence`, `cause`, `fix` of a class: all three words or none.
  Expected<void> read_words(const nlohmann::json& entry, const std::string& at,
                            ClassSpec& spec) const {
    const std::pair<const char*, std::string*> words[] = {
        {"gate", &spec.gate}, {"cause", &spec.cause}, {"fix", &spec.fix}};
    int given = 0;
    for (const auto& [key, target] : words) {
      auto value = string_at(entry, at, key, false);
      if (!value) return tl::unexpected(value.error());
      *target = std::move(*value);
      given += target->empty() ? 0 : 1;
    }
    if (given != 0 && given != 3) {
      return tl::unexpected(
          error(at, fmt::format("class `{}`: give gate, cause and fix together", spec.id),
                "they are what a library's message of the class means"));
    }
    auto confidence = read_confidence(entry, at, fmt::format("class `{}`", spec.id));
    if (!confidence) return tl::unexpected(confidence.error());
    spec.confidence = confidence->value_or(spec.confidence);
    return {};
  }

  const config::DataFile& file_;
};

// How directly a library's message names its cause, below every hand-written signature
// (default 50) and above the generic fallbacks.
constexpr int kMessageSpecificity = 30;

// `text` as a catalog template that prints it as it is.
std::string literal_template(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

}  // namespace

Expected<void> attach_messages(Catalog& catalog, std::vector<MessageLibrary> libraries,
                               bool skip_classes_without_words) {
  for (std::size_t l = 0; l < libraries.size(); ++l) {
    const MessageLibrary& library = libraries[l];
    for (std::size_t m = 0; m < library.messages.size(); ++m) {
      const Message& message = library.messages[m];
      if (message.klass.empty()) continue;
      const ClassSpec* spec = catalog.class_spec(message.klass);
      if (spec == nullptr || spec->cause.empty()) {
        if (skip_classes_without_words) continue;
        Error e = make_error(
            ErrorKind::kConfig,
            fmt::format("message of class `{}` ({}): the class has no words for messages",
                        message.klass, message.where),
            fmt::format("give [[class]] id = \"{}\" gate, cause and fix in {}", message.klass,
                        catalog.path));
        e.file = library.path;
        e.line = message.line;
        e.key = "class";
        return tl::unexpected(e);
      }
      // A library's warnings are printed by runs that go on; only NCCL's WARN is its report of
      // a failing call. Other warnings are kept for the coverage report, never as a cause.
      if (message.level != "error" && message.kind != "WARN") continue;
      auto pattern = message_pattern(printed_text(message));
      auto literal = message_literal(printed_text(message));
      if (!pattern || !literal) continue;
      Signature sig;
      sig.library = static_cast<int>(l);
      sig.message = m;
      sig.text.id = fmt::format("{}:{}", library.name, message.where);
      sig.text.klass = message.klass;
      sig.text.gate = spec->gate;
      sig.text.confidence = spec->confidence;
      sig.text.specificity = kMessageSpecificity;
      sig.text.line = message.line;
      // `{message}` is what the log says; the words name where the library prints it.
      sig.text.symptom = "{message}";
      sig.text.cause =
          literal_template(fmt::format("{} (the {} of {} {}, {})", spec->cause, message.level,
                                       library.name, message.versions, message.where));
      sig.text.fix = literal_template(spec->fix);
      for (const SignatureVariant& v : spec->when) {
        SignatureVariant words = v;
        if (v.symptom) words.symptom = literal_template(*v.symptom);
        if (v.cause) {
          words.cause =
              literal_template(fmt::format("{} (the {} of {} {}, {})", *v.cause, message.level,
                                           library.name, message.versions, message.where));
        }
        if (v.fix) words.fix = literal_template(*v.fix);
        sig.when.push_back(std::move(words));
      }
      sig.patterns.push_back(fmt::format("(?P<message>{}[^\\n]*)", *pattern));
      sig.literal = std::move(*literal);
      catalog.signatures.push_back(std::move(sig));
    }
  }
  catalog.libraries = std::move(libraries);
  return {};
}

const RuleText* Catalog::rule(std::string_view id) const {
  for (const RuleText& r : rules) {
    if (r.text.id == id) return &r;
  }
  return nullptr;
}

const ClassSpec* Catalog::class_spec(std::string_view klass) const {
  for (const ClassSpec& c : classes) {
    if (c.id == klass) return &c;
  }
  return nullptr;
}

Expected<Catalog> parse_catalog(const config::DataFile& file) { return CatalogReader(file).read(); }

Expected<Catalog> load_catalog(const std::filesystem::path& path) {
  auto file = config::load_data_file(path);
  if (!file) return tl::unexpected(file.error());
  auto catalog = parse_catalog(*file);
  if (!catalog) return catalog;
  auto libraries = builtin_message_libraries();
  if (!libraries) return tl::unexpected(libraries.error());
  // A catalog of one's own keeps the libraries' messages of the classes it has words for.
  if (auto ok = attach_messages(*catalog, std::move(*libraries), true); !ok)
    return tl::unexpected(ok.error());
  return catalog;
}

Expected<Catalog> builtin_catalog() {
  auto file = config::parse_data_file(kBuiltinCatalogText, "stages/diagnoses.toml (built in)");
  if (!file) return tl::unexpected(file.error());
  auto catalog = parse_catalog(*file);
  if (!catalog) return catalog;
  auto libraries = builtin_message_libraries();
  if (!libraries) return tl::unexpected(libraries.error());
  if (auto ok = attach_messages(*catalog, std::move(*libraries)); !ok)
    return tl::unexpected(ok.error());
  return catalog;
}

Errors unknown_gates(const Catalog& catalog, const std::vector<std::string>& gate_ids) {
  const std::vector<std::string_view> ids(gate_ids.begin(), gate_ids.end());
  Errors errors;
  auto check = [&](const EntryText& text) {
    if (std::find(gate_ids.begin(), gate_ids.end(), text.gate) != gate_ids.end()) return;
    const auto near = closest_match(text.gate, ids);
    Error e = make_error(ErrorKind::kConfig,
                         fmt::format("entry `{}`: unknown gate `{}`{}", text.id, text.gate,
                                     near ? fmt::format(" (did you mean `{}`?)", *near) : ""),
                         fmt::format("the gate to return to is one of the gate files' ids: {}",
                                     fmt::join(gate_ids, ", ")));
    e.file = catalog.path;
    e.line = text.line;
    e.key = "gate";
    errors.push_back(std::move(e));
  };
  auto check_variants = [&](const EntryText& base, const std::vector<SignatureVariant>& when) {
    for (const SignatureVariant& v : when) {
      if (!v.gate) continue;
      EntryText text = base;
      text.gate = *v.gate;
      text.line = v.line;
      check(text);
    }
  };
  for (const Signature& s : catalog.signatures) {
    if (s.library >= 0) continue;  // a message's gates are its class's, checked below
    check(s.text);
    check_variants(s.text, s.when);
  }
  for (const ClassSpec& c : catalog.classes) {
    if (c.gate.empty()) continue;
    EntryText text;
    text.id = c.id;
    text.gate = c.gate;
    text.line = c.line;
    check(text);
    check_variants(text, c.when);
  }
  for (const RuleText& r : catalog.rules) check(r.text);
  return errors;
}

}  // namespace bigmac::diagnose
