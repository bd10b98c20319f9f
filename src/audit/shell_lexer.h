#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bigmac::audit {

/// A piece of a shell word: literal text, a variable expansion, or something only running the
/// script could tell (command substitution, arithmetic, an unusual parameter expansion).
struct WordPart {
  enum class Kind { kLiteral, kVariable, kOpaque };
  Kind kind = Kind::kLiteral;
  std::string text;           ///< the literal text, the variable's name, or the opaque source text
  int line = 0;               ///< where the part starts; literal text may run over several lines
  bool quoted = false;        ///< inside quotes: no word splitting
  bool has_fallback = false;  ///< ${NAME:-fallback} / ${NAME-fallback} / ${NAME:=fallback}
  std::string fallback;
  bool all_elements = false;  ///< ${NAME[@]} / ${NAME[*]}

  static WordPart make(Kind kind, std::string text, int line, bool quoted) {
    WordPart p;
    p.kind = kind;
    p.text = std::move(text);
    p.line = line;
    p.quoted = quoted;
    return p;
  }
};

/// One word of a command after quote removal, before expansion. An array assignment
/// `NAME=( a b )` is the word `NAME=` with its elements.
struct ShellWord {
  std::vector<WordPart> parts;
  int line = 0;
  bool is_array = false;
  std::vector<ShellWord> elements;

  /// The word's text when it has no expansion, else empty.
  std::string literal_text() const;
  bool is_literal() const;
};

/// A simple command: its words in order, as separated by newlines, `;`, `&&`, `||`, `|`, `&`
/// and parentheses. Redirections and here-document bodies are left out.
struct ShellCommand {
  std::vector<ShellWord> words;
  int line = 0;
};

/// A `#SBATCH` line of the leading comment block (sbatch reads no directive after the first
/// command).
struct ShellDirective {
  int line = 0;
  std::string text;  ///< what follows "#SBATCH"
};

struct ShellScript {
  std::vector<ShellCommand> commands;
  std::vector<ShellDirective> directives;
};

/// Splits a POSIX shell / bash script into commands and words the way the shell would:
/// single and double quotes, backslash escapes, line continuations, comments, `$VAR`,
/// `${VAR:-default}`, `${ARR[@]}`, `$(...)`, backticks, arrays and here-documents. It never
/// fails: text it cannot make sense of becomes opaque parts.
ShellScript lex_shell(std::string_view text);

}  // namespace bigmac::audit
