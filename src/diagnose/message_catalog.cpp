#include "diagnose/message_catalog.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace bigmac::diagnose {

// Defined in the generated messages_text.cpp (stages/messages/*.toml at build time).
struct BuiltinMessageText {
  const char* path;
  const char* text;
};
extern const BuiltinMessageText kBuiltinMessageTexts[];
extern const std::size_t kBuiltinMessageTextCount;

namespace {

constexpr std::array<std::string_view, 6> kMessageKeys = {"text",  "where", "versions",
                                                          "level", "kind",  "class"};

std::string string_or_empty(const nlohmann::json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A template's parts: literal text, and where a value goes (`{}`); `{{`/`}}` are braces.
struct Part {
  bool hole = false;
  std::string text;
};

std::vector<Part> parts_of(std::string_view segment) {
  std::vector<Part> parts;
  auto literal = [&](char c) {
    if (parts.empty() || parts.back().hole) parts.push_back({});
    parts.back().text += c;
  };
  for (std::size_t i = 0; i < segment.size(); ++i) {
    const char c = segment[i];
    if ((c == '{' || c == '}') && i + 1 < segment.size() && segment[i + 1] == c) {
      literal(c);
      ++i;
    } else if (c == '{') {
      const std::size_t close = segment.find('}', i);
      if (close == std::string_view::npos) {
        literal(c);
        continue;
      }
      if (parts.empty() || !parts.back().hole) parts.push_back({true, {}});
      i = close;
    } else {
      literal(c);
    }
  }
  return parts;
}

struct Words {
  int words = 0;
  int letters = 0;
};

Words count_words(const std::vector<Part>& parts) {
  Words w;
  for (const Part& p : parts) {
    if (p.hole) continue;
    int run = 0;
    for (char c : p.text + ' ') {
      if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
        ++run;
      } else {
        if (run >= 2) {
          ++w.words;
          w.letters += run;
        }
        run = 0;
      }
    }
  }
  return w;
}

// One identifier that names a failure by itself: CUBLAS_STATUS_NOT_INITIALIZED,
// cudaErrorInvalidDevice.
bool lone_identifier(const std::vector<Part>& parts) {
  if (parts.size() != 1 || parts[0].hole) return false;
  const std::string& t = parts[0].text;
  if (t.size() < 12) return false;
  bool marked = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (std::isalnum(c) == 0 && c != '_') return false;
    if (c == '_' || (i > 0 && std::isupper(c) != 0)) marked = true;
  }
  return marked;
}

// Every run of whitespace as one space, none at either end.
std::string collapsed_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string quoted_words(std::string_view text) {
  std::string out;
  for (char c : collapsed_spaces(text))
    out += c == ' ' ? std::string("\\s+") : RE2::QuoteMeta(std::string_view(&c, 1));
  return out;
}

}  // namespace

std::size_t MessageLibrary::classified() const {
  return static_cast<std::size_t>(std::count_if(messages.begin(), messages.end(),
                                                [](const Message& m) { return !m.klass.empty(); }));
}

namespace {

// The most specific line of a message that spans several (a log shows each on its own), its
// values at either end left out (the search is unanchored).
std::vector<Part> best_line(std::string_view text, Words& best_words) {
  std::vector<Part> best;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::vector<Part> parts = parts_of(text.substr(start, end - start));
    const Words w = count_words(parts);
    if (w.letters > best_words.letters) {
      best = std::move(parts);
      best_words = w;
    }
    start = end + 1;
  }
  while (!best.empty() && best.front().hole) best.erase(best.begin());
  while (!best.empty() && best.back().hole) best.pop_back();
  return best;
}

bool specific_enough(const std::vector<Part>& best, const Words& w) {
  return lone_identifier(best) || (w.words >= 3 && w.letters >= 12);
}

}  // namespace

std::string printed_text(const Message& message) {
  return message.kind == "WARN" ? "NCCL WARN " + message.text : message.text;
}

std::optional<std::string> message_literal(std::string_view text) {
  const std::optional<std::string> words = message_words(text);
  if (!words) return std::nullopt;
  return quoted_words(*words);
}

std::optional<std::string> message_words(std::string_view text) {
  Words w;
  const std::vector<Part> best = best_line(text, w);
  if (!specific_enough(best, w)) return std::nullopt;
  const Part* longest = nullptr;
  int most = -1;
  for (const Part& p : best) {
    if (p.hole) continue;
    const int letters = count_words({p}).letters;
    if (letters > most) {
      most = letters;
      longest = &p;
    }
  }
  if (longest == nullptr) return std::nullopt;
  std::string_view literal = longest->text;
  literal.remove_prefix(std::min(literal.find_first_not_of(" \t"), literal.size()));
  literal = literal.substr(0, literal.find_last_not_of(" \t") + 1);
  return collapsed_spaces(literal);
}

std::vector<std::optional<MessageRef>> find_messages(const std::vector<MessageLibrary>& libraries,
                                                     const std::vector<std::string>& lines) {
  std::vector<std::optional<MessageRef>> found(lines.size());
  std::vector<std::string> plain;
  plain.reserve(lines.size());
  for (const std::string& line : lines) plain.push_back(collapsed_spaces(line));
  std::vector<std::size_t> best_length(lines.size());
  for (std::size_t l = 0; l < libraries.size(); ++l) {
    const MessageLibrary& library = libraries[l];
    for (std::size_t m = 0; m < library.messages.size(); ++m) {
      const std::string text = printed_text(library.messages[m]);
      const std::optional<std::string> words = message_words(text);
      if (!words) continue;
      for (std::size_t i = 0; i < plain.size(); ++i) {
        // The longest literal that the line holds and whose whole pattern matches it.
        if (words->size() <= best_length[i] || plain[i].find(*words) == std::string::npos) continue;
        const std::optional<std::string> pattern = message_pattern(text);
        if (!pattern) continue;
        const RE2 re(*pattern);
        if (!re.ok() || !RE2::PartialMatch(lines[i], re)) continue;
        found[i] = MessageRef{l, m};
        best_length[i] = words->size();
      }
    }
  }
  return found;
}

std::optional<std::string> message_pattern(std::string_view text) {
  Words best_words;
  const std::vector<Part> best = best_line(text, best_words);
  if (!specific_enough(best, best_words)) return std::nullopt;
  if (lone_identifier(best)) return "\\b" + best[0].text + "\\b";
  std::string pattern;
  for (std::size_t i = 0; i < best.size(); ++i) {
    const Part& p = best[i];
    if (p.hole) {
      pattern += ".*?";
      continue;
    }
    std::string_view literal = p.text;
    if (i == 0) literal.remove_prefix(std::min(literal.find_first_not_of(" \t"), literal.size()));
    if (i + 1 == best.size()) literal = literal.substr(0, literal.find_last_not_of(" \t") + 1);
    // A space beside a value may be all the value left (an empty value).
    const bool lead = !literal.empty() && std::isspace(static_cast<unsigned char>(literal[0]));
    const bool trail =
        !literal.empty() && std::isspace(static_cast<unsigned char>(literal.back())) != 0;
    if (lead && i > 0) pattern += "\\s*";
    pattern += quoted_words(literal);
    if (trail && i + 1 < best.size()) pattern += "\\s*";
  }
  return pattern;
}

std::size_t matchable(const MessageLibrary& library) {
  return static_cast<std::size_t>(
      std::count_if(library.messages.begin(), library.messages.end(),
                    [](const Message& m) { return message_pattern(printed_text(m)).has_value(); }));
}

Expected<MessageLibrary> parse_message_library(const config::DataFile& file) {
  MessageLibrary library;
  library.path = file.path;
  const nlohmann::json& root = file.root;
  auto source = root.find("source");
  if (source == root.end() || !source->is_object()) {
    return tl::unexpected(file.error_at("source", "the file lacks its [source] table",
                                        "[source] names the library, where its sources came "
                                        "from and the versions scanned"));
  }
  library.name = string_or_empty(*source, "library");
  library.from = string_or_empty(*source, "from");
  if (library.name.empty() || library.from.empty()) {
    return tl::unexpected(
        file.error_at("source", "[source] must give `library` and `from` as strings"));
  }
  if (auto v = source->find("versions"); v != source->end() && v->is_array()) {
    for (const auto& version : *v) {
      if (version.is_string()) library.versions.push_back(version.get<std::string>());
    }
  }
  auto list = root.find("message");
  if (list == root.end()) return library;
  if (!list->is_array()) {
    return tl::unexpected(
        file.error_at("message", "`message` must be an array of tables", "write [[message]]"));
  }
  library.messages.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& entry = (*list)[i];
    const std::string at = fmt::format("message[{}]", i);
    if (!entry.is_object()) return tl::unexpected(file.error_at(at, "an entry must be a table"));
    for (const auto& [key, value] : entry.items()) {
      if (std::find(kMessageKeys.begin(), kMessageKeys.end(), key) == kMessageKeys.end()) {
        return tl::unexpected(file.error_at(at + "." + key, fmt::format("unknown key `{}`", key),
                                            "a message has text, where, versions, level, kind "
                                            "and class"));
      }
      if (!value.is_string()) {
        return tl::unexpected(
            file.error_at(at + "." + key, fmt::format("`{}` must be a string", key)));
      }
    }
    Message m;
    m.text = string_or_empty(entry, "text");
    m.where = string_or_empty(entry, "where");
    m.versions = string_or_empty(entry, "versions");
    m.level = string_or_empty(entry, "level");
    m.kind = string_or_empty(entry, "kind");
    m.klass = string_or_empty(entry, "class");
    if (auto p = file.positions.find(at + ".text"); p != file.positions.end())
      m.line = p->second.line;
    if (m.text.empty()) return tl::unexpected(file.error_at(at, "a message needs its `text`"));
    if (m.level != "error" && m.level != "warning") {
      return tl::unexpected(file.error_at(
          at + ".level", fmt::format("level `{}`: expected error or warning", m.level)));
    }
    library.messages.push_back(std::move(m));
  }
  return library;
}

Expected<std::vector<MessageLibrary>> builtin_message_libraries() {
  std::vector<MessageLibrary> out;
  for (std::size_t i = 0; i < kBuiltinMessageTextCount; ++i) {
    const BuiltinMessageText& t = kBuiltinMessageTexts[i];
    auto file = config::parse_data_file(t.text, fmt::format("{} (built in)", t.path));
    if (!file) return tl::unexpected(file.error());
    auto library = parse_message_library(*file);
    if (!library) return tl::unexpected(library.error());
    out.push_back(std::move(*library));
  }
  return out;
}

std::vector<MessageCoverage> message_coverage(const std::vector<MessageLibrary>& libraries,
                                              const std::vector<std::size_t>& signatures) {
  std::vector<MessageCoverage> rows;
  for (std::size_t l = 0; l < libraries.size(); ++l) {
    const MessageLibrary& library = libraries[l];
    MessageCoverage row;
    row.library = library.name;
    if (!library.versions.empty()) {
      row.versions = library.versions.size() == 1
                         ? library.versions.front()
                         : fmt::format("{} .. {} ({})", library.versions.front(),
                                       library.versions.back(), library.versions.size());
    }
    row.collected = library.messages.size();
    row.classified = library.classified();
    row.matchable = matchable(library);
    row.signatures = l < signatures.size() ? signatures[l] : 0;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string coverage_table(const std::vector<MessageCoverage>& rows) {
  std::string out =
      "| library | versions scanned | collected | classified | matchable | diagnosed |\n"
      "|---|---|---:|---:|---:|---:|\n";
  MessageCoverage total;
  for (const MessageCoverage& r : rows) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.library, r.versions, r.collected,
                       r.classified, r.matchable, r.signatures);
    total.collected += r.collected;
    total.classified += r.classified;
    total.matchable += r.matchable;
    total.signatures += r.signatures;
  }
  out += fmt::format("| all | | {} | {} | {} | {} |\n", total.collected, total.classified,
                     total.matchable, total.signatures);
  return out;
}

}  // namespace bigmac::diagnose
