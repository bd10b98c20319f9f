#include "audit/shell_reader.h"

#include <cctype>
#include <map>
#include <set>

#include "audit/launch_command.h"
#include "audit/shell_lexer.h"

namespace bigmac::audit {
namespace {

/// A shell variable as the script left it: its words (an array's elements, or the value split
/// where unquoted use would split it), whether every part was known, and where it was set.
struct Variable {
  std::vector<ArgWord> words;
  std::string text;  ///< the whole value
  bool literal = true;
  bool exported = false;
  int line = 0;
};

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

class ScriptReader {
 public:
  ScriptReader(const std::string& file, ProjectFacts& facts) : file_(file), facts_(facts) {}

  void read(const ShellScript& script) {
    for (const ShellDirective& d : script.directives) directive(d);
    for (const ShellCommand& c : script.commands) command(c);
  }

 private:
  // ---- expansion -----------------------------------------------------------------------
  static int variable_parts(const ShellWord& word) {
    int n = 0;
    for (const WordPart& p : word.parts) n += p.kind == WordPart::Kind::kVariable ? 1 : 0;
    return n;
  }

  /// Expands a word as the shell would at this point of the script: variables set earlier
  /// are substituted (unquoted ones split into words), unknown ones stay as `$NAME`.
  std::vector<ArgWord> expand(const ShellWord& word, bool split = true) const {
    if (word.parts.size() == 1 && word.parts[0].kind == WordPart::Kind::kVariable &&
        word.parts[0].all_elements) {
      auto it = vars_.find(word.parts[0].text);
      return it == vars_.end() ? std::vector<ArgWord>{} : it->second.words;
    }
    std::vector<ArgWord> out{ArgWord{"", word.line, true, "", false}};
    bool pending_empty = true;  // a word of only an unquoted, empty expansion disappears
    for (const WordPart& part : word.parts) {
      if (part.kind == WordPart::Kind::kLiteral) {
        out.back().text += part.text;
        pending_empty = pending_empty && !part.quoted && part.text.empty();
        continue;
      }
      if (part.kind == WordPart::Kind::kOpaque) {
        out.back().text += part.text;
        out.back().literal = false;
        pending_empty = false;
        continue;
      }
      auto it = vars_.find(part.text);
      std::string value;
      bool known = true;
      bool fallback = false;
      if (it != vars_.end()) {
        value = it->second.text;
        known = it->second.literal;
      } else if (part.has_fallback) {
        value = part.fallback;
        known = value.find('$') == std::string::npos && value.find('`') == std::string::npos;
        fallback = true;
      } else {
        value = "$" + part.text;
        known = false;
      }
      if (variable_parts(word) == 1) {
        out.back().variable = part.text;
        out.back().from_fallback = fallback;
      }
      out.back().literal = out.back().literal && known;
      if (part.quoted || !split || !known) {
        out.back().text += value;
        pending_empty = false;
        continue;
      }
      // Unquoted: split on blanks, each word keeping the line it was written on.
      const std::vector<ArgWord>* source = it != vars_.end() ? &it->second.words : nullptr;
      std::size_t start = 0;
      std::size_t index = 0;
      while (start < value.size()) {
        while (start < value.size() && is_blank(value[start])) {
          if (!out.back().text.empty()) out.push_back(ArgWord{"", word.line, true, "", false});
          ++start;
        }
        std::size_t end = start;
        while (end < value.size() && !is_blank(value[end])) ++end;
        if (end > start) {
          out.back().text += value.substr(start, end - start);
          // A word that is only the variable takes the line each piece was written on.
          if (source && index < source->size() && word.parts.size() == 1) {
            out.back().line = (*source)[index].line;
          }
          ++index;
          pending_empty = false;
        }
        start = end;
      }
    }
    if (pending_empty && out.size() == 1 && out[0].text.empty() && !word.parts.empty()) return {};
    if (!out.empty() && out.back().text.empty() && out.size() > 1) out.pop_back();
    return out;
  }

  /// Splits a value into words with the line of each, from the parts of the word it came
  /// from (a double-quoted value over several lines keeps each flag's own line).
  static std::vector<ArgWord> value_words(const ShellWord& word, const std::string& text) {
    std::vector<ArgWord> words;
    std::vector<int> line_of;
    if (word.is_literal()) {
      for (const WordPart& part : word.parts) {
        int line = part.line;
        for (char c : part.text) {
          line_of.push_back(line);
          if (c == '\n') ++line;
        }
      }
    }
    line_of.resize(text.size(), word.line);
    std::size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && is_blank(text[i])) ++i;
      std::size_t end = i;
      while (end < text.size() && !is_blank(text[end])) ++end;
      if (end > i) words.push_back(ArgWord{text.substr(i, end - i), line_of[i], true, "", false});
      i = end;
    }
    return words;
  }

  // ---- commands ------------------------------------------------------------------------
  static bool assignment_name(const ShellWord& w, std::string& name) {
    if (w.parts.empty() || w.parts[0].kind != WordPart::Kind::kLiteral || w.parts[0].quoted) {
      return false;
    }
    const std::string& first = w.parts[0].text;
    const auto eq = first.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    for (std::size_t i = 0; i < eq; ++i) {
      const char c = first[i];
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_') ||
          (i == 0 && std::isdigit(static_cast<unsigned char>(c)))) {
        return false;
      }
    }
    name = first.substr(0, eq);
    return true;
  }

  void assign(const ShellWord& w, const std::string& name, bool exported, bool command_prefix) {
    Variable v;
    v.line = w.line;
    v.exported = exported || (vars_.count(name) && vars_.at(name).exported);
    bool from_fallback = false;
    if (w.is_array) {
      for (const ShellWord& e : w.elements) {
        for (ArgWord& a : expand(e)) v.words.push_back(std::move(a));
      }
      for (const ArgWord& a : v.words) {
        v.text += (v.text.empty() ? "" : " ") + a.text;
        v.literal = v.literal && a.literal;
      }
    } else {
      // The value is the word after "NAME=": expanded without splitting, as bash assigns.
      ShellWord value = w;
      value.parts[0].text = value.parts[0].text.substr(name.size() + 1);
      const auto expanded = expand(value, false);
      if (!expanded.empty()) {
        v.text = expanded[0].text;
        v.literal = expanded[0].literal;
        from_fallback = expanded[0].from_fallback;
      }
      v.words = v.literal ? value_words(value, v.text) : std::vector<ArgWord>{};
    }
    record_variable(name, v,
                    command_prefix ? Source::kEnvironment
                    : exported     ? Source::kEnvironment
                                   : Source::kScript,
                    from_fallback);
    if (!command_prefix) vars_[name] = std::move(v);
  }

  void record_variable(const std::string& name, const Variable& v, Source source, bool fallback) {
    const auto setting = find_setting(name);
    if (!setting) return;
    Place p = Place::at(file_, v.line, *setting, PlaceKind::kWrite, source, config::Layer::kLaunch);
    p.spelling = name;
    if (v.literal) {
      p.value = SettingValue::from_text(v.text);
      if (fallback) p.note = "unless $" + name + " is already set in the environment";
    } else {
      p.kind = PlaceKind::kDerived;
      p.note = "= " + v.text;
    }
    facts_.places.push_back(std::move(p));
  }

  void command(const ShellCommand& c) {
    static const std::set<std::string, std::less<>> keywords = {
        "if", "then", "elif", "else", "do", "while", "until", "!", "{", "}"};
    static const std::set<std::string, std::less<>> declarations = {"export", "declare", "local",
                                                                    "readonly", "typeset"};
    std::size_t i = 0;
    while (i < c.words.size() && keywords.count(c.words[i].literal_text())) ++i;
    if (i < c.words.size() && declarations.count(c.words[i].literal_text())) {
      const bool exported = c.words[i].literal_text() == "export";
      bool x_flag = false;
      for (++i; i < c.words.size(); ++i) {
        std::string name;
        const std::string text = c.words[i].literal_text();
        if (text.starts_with("-")) {
          x_flag = x_flag || text.find('x') != std::string::npos;
        } else if (assignment_name(c.words[i], name)) {
          assign(c.words[i], name, exported || x_flag, false);
        } else if (!text.empty() && vars_.count(text)) {
          vars_[text].exported = vars_[text].exported || exported;
          if (exported) {
            Variable v = vars_[text];
            v.line = c.words[i].line;
            record_variable(text, v, Source::kEnvironment, false);
          }
        }
      }
      return;
    }
    std::vector<const ShellWord*> prefix;
    std::string name;
    while (i < c.words.size() && assignment_name(c.words[i], name)) prefix.push_back(&c.words[i++]);
    const bool only_assignments = i == c.words.size();
    for (const ShellWord* w : prefix) {
      assignment_name(*w, name);
      assign(*w, name, false, !only_assignments);
    }
    if (only_assignments) return;
    std::vector<ArgWord> argv;
    for (; i < c.words.size(); ++i) {
      for (ArgWord& a : expand(c.words[i])) argv.push_back(std::move(a));
    }
    launch(argv);
  }

  void launch(const std::vector<ArgWord>& argv) {
    const LaunchCommand cmd = parse_launch_command(argv);
    for (const LauncherCall& call : cmd.launchers) {
      for (const CommandFlag& flag : call.flags) {
        if (call.name == "torchrun" && flag.name == "--standalone") {
          Place p = Place::at(file_, flag.line, Setting::kNnodes, PlaceKind::kWrite,
                              Source::kScript, config::Layer::kLaunch);
          p.value = SettingValue::from_integer(1);
          p.spelling = "--standalone";
          p.note = "torchrun --standalone runs on one node";
          facts_.places.push_back(std::move(p));
          continue;
        }
        std::string name = long_flag_name(call.name, flag.name);
        flag_place(name.empty() ? flag.name : name, flag, call.name + " " + flag.name,
                   call.name == "sbatch" ? Source::kDirective : Source::kScript);
      }
    }
    if (cmd.program) {
      facts_.references.push_back(FileReference{file_, cmd.program->line, cmd.program->text,
                                                cmd.module, 0, !cmd.shell_script});
    }
    for (const CommandFlag& flag : cmd.flags) {
      flag_place(flag.name, flag, flag.name, Source::kScript);
      if (flag.value) reference(*flag.value);
    }
    for (const ArgWord& w : cmd.positionals) reference(w);
  }

  void reference(const ArgWord& w) {
    if (w.text.find('/') == std::string::npos && w.text.find('.') == std::string::npos) return;
    // "$REPO/configs/pp4.yaml": what follows the last unknown part still names the file.
    std::string text = w.text;
    if (!w.literal) {
      const auto slash = text.find('/', text.rfind('$') == std::string::npos ? 0 : text.rfind('$'));
      if (slash == std::string::npos) return;
      text = text.substr(slash + 1);
    }
    facts_.references.push_back(FileReference{file_, w.line, text, false, 0, false});
  }

  void flag_place(const std::string& name, const CommandFlag& flag, const std::string& spelling,
                  Source source) {
    auto setting = find_setting(name);
    if (!setting) {
      if (name == "--gres" && flag.value && flag.value->text.starts_with("gpu:")) {
        setting = Setting::kDevices;
      } else {
        return;
      }
    }
    Place p =
        Place::at(file_, flag.line, *setting, PlaceKind::kRead, source, config::Layer::kLaunch);
    p.spelling = spelling;
    if (!flag.value) {
      p.kind = PlaceKind::kWrite;
      p.value = SettingValue::from_text("true");
    } else if (!flag.value->variable.empty() && vars_.count(flag.value->variable) &&
               find_setting(flag.value->variable)) {
      // The variable is the write (recorded where it was set); the flag passes it on.
      p.note = "passes $" + flag.value->variable + " on";
    } else if (flag.value->literal) {
      p.kind = PlaceKind::kWrite;
      std::string text = flag.value->text;
      if (name == "--gres") text = text.substr(text.rfind(':') + 1);
      p.value = SettingValue::from_text(text);
      if (!flag.value->variable.empty()) {
        p.note = flag.value->from_fallback ? "${" + flag.value->variable + ":-...} fallback"
                                           : "from $" + flag.value->variable;
      }
    } else {
      p.note = "passes " + flag.value->text + " on";
    }
    facts_.places.push_back(std::move(p));
  }

  void directive(const ShellDirective& d) {
    const ShellScript line = lex_shell(d.text);
    std::vector<ArgWord> argv{ArgWord{"sbatch", d.line, true, "", false}};
    for (const ShellCommand& c : line.commands) {
      for (const ShellWord& w : c.words) {
        for (ArgWord& a : expand(w)) {
          a.line = d.line;
          argv.push_back(std::move(a));
        }
      }
    }
    LaunchCommand cmd = parse_launch_command(argv);
    for (const LauncherCall& call : cmd.launchers) {
      for (const CommandFlag& flag : call.flags) {
        std::string name = long_flag_name("sbatch", flag.name);
        flag_place(name.empty() ? flag.name : name, flag, "#SBATCH " + flag.name,
                   Source::kDirective);
      }
    }
  }

  const std::string& file_;
  ProjectFacts& facts_;
  std::map<std::string, Variable> vars_;
};

}  // namespace

void read_shell_script(std::string_view text, const std::string& file, ProjectFacts& facts) {
  ScriptReader(file, facts).read(lex_shell(text));
}

}  // namespace bigmac::audit
