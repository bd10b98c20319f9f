#include "audit/shell_lexer.h"

#include <cctype>

namespace bigmac::audit {

std::string ShellWord::literal_text() const {
  std::string out;
  for (const WordPart& p : parts) {
    if (p.kind != WordPart::Kind::kLiteral) return {};
    out += p.text;
  }
  return out;
}

bool ShellWord::is_literal() const {
  for (const WordPart& p : parts) {
    if (p.kind != WordPart::Kind::kLiteral) return false;
  }
  return !is_array;
}

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// `name=(` opens an array; a word of only empty parts (`""`, a line continuation) does not.
bool ends_with_equals(const ShellWord& word) {
  const std::string text = word.literal_text();
  return !text.empty() && text.back() == '=';
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  ShellScript run() {
    while (pos_ < s_.size()) step();
    end_command();
    return std::move(script_);
  }

 private:
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }

  char take() {
    const char c = s_[pos_++];
    if (c == '\n') ++line_;
    return c;
  }

  /// Appends a character already taken; a newline was counted by take(), so it belongs to
  /// the line before.
  void literal(char c, bool quoted) {
    const int line = c == '\n' ? line_ - 1 : line_;
    if (word_.parts.empty()) word_.line = line;
    if (word_.parts.empty() || word_.parts.back().kind != WordPart::Kind::kLiteral ||
        word_.parts.back().quoted != quoted) {
      word_.parts.push_back(WordPart::make(WordPart::Kind::kLiteral, "", line, quoted));
    }
    word_.parts.back().text.push_back(c);
    started_ = true;
  }

  void part(WordPart p) {
    if (word_.parts.empty()) word_.line = p.line;
    word_.parts.push_back(std::move(p));
    started_ = true;
  }

  void end_word() {
    if (!started_) return;
    if (skip_word_) {
      skip_word_ = false;
    } else {
      if (command_.words.empty()) command_.line = word_.line;
      target().push_back(std::move(word_));
    }
    word_ = ShellWord{};
    started_ = false;
  }

  std::vector<ShellWord>& target() { return array_ != nullptr ? array_->elements : command_.words; }

  void end_command() {
    end_word();
    if (array_ != nullptr) return;  // an array's elements may span lines
    if (!command_.words.empty()) {
      script_.commands.push_back(std::move(command_));
      seen_command_ = true;
    }
    command_ = ShellCommand{};
  }

  void step() {
    const char c = peek();
    if (c == '\\') {
      take();
      if (peek() == '\n') {
        take();  // line continuation; what follows starts a part on the next line
        if (started_)
          word_.parts.push_back(WordPart::make(WordPart::Kind::kLiteral, "", line_, false));
      } else if (pos_ < s_.size()) {
        literal(take(), true);
      }
    } else if (c == ' ' || c == '\t' || c == '\r') {
      take();
      end_word();
    } else if (c == '\n') {
      take();
      end_command();
      skip_heredocs();
    } else if (c == '#' && !started_) {
      comment();
    } else if (c == '\'') {
      take();
      single_quoted();
    } else if (c == '"') {
      take();
      double_quoted();
    } else if (c == '$') {
      part(dollar(false));
    } else if (c == '`') {
      part(backtick(false));
    } else if (c == '(' && started_ && word_.is_literal() && ends_with_equals(word_)) {
      take();
      open_array();
    } else if (c == ')' && array_ != nullptr) {
      take();
      close_array();
    } else if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
      take();
      end_command();
    } else if (c == '<' || c == '>') {
      redirection();
    } else {
      literal(take(), false);
    }
  }

  void comment() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && peek() != '\n') take();
    std::string_view text = s_.substr(start, pos_ - start);
    if (!seen_command_ && command_.words.empty() && text.starts_with("#SBATCH")) {
      script_.directives.push_back(ShellDirective{line_, std::string(text.substr(7))});
    }
  }

  void single_quoted() {
    if (!started_) word_.line = line_;
    started_ = true;
    word_.parts.push_back(WordPart::make(WordPart::Kind::kLiteral, "", line_, true));
    while (pos_ < s_.size() && peek() != '\'') word_.parts.back().text.push_back(take());
    if (pos_ < s_.size()) take();
  }

  void double_quoted() {
    if (!started_) word_.line = line_;
    started_ = true;
    while (pos_ < s_.size() && peek() != '"') {
      const char c = peek();
      if (c == '\\' && (peek(1) == '$' || peek(1) == '`' || peek(1) == '"' || peek(1) == '\\')) {
        take();
        literal(take(), true);
      } else if (c == '\\' && peek(1) == '\n') {
        take();
        take();
        word_.parts.push_back(WordPart::make(WordPart::Kind::kLiteral, "", line_, true));
      } else if (c == '$') {
        part(dollar(true));
      } else if (c == '`') {
        part(backtick(true));
      } else {
        literal(take(), true);
      }
    }
    if (pos_ < s_.size()) take();
    // An empty "" still makes a word.
    if (word_.parts.empty())
      word_.parts.push_back(WordPart::make(WordPart::Kind::kLiteral, "", line_, true));
  }

  /// Text up to the bracket that closes the one just consumed, nesting counted.
  std::string balanced(char open, char close) {
    std::string out;
    int depth = 1;
    while (pos_ < s_.size()) {
      const char c = take();
      if (c == open) ++depth;
      if (c == close && --depth == 0) break;
      out.push_back(c);
    }
    return out;
  }

  WordPart dollar(bool quoted) {
    WordPart p = WordPart::make(WordPart::Kind::kVariable, "", line_, quoted);
    take();  // '$'
    const char c = peek();
    if (c == '(') {
      take();
      p.kind = WordPart::Kind::kOpaque;
      p.text = "$(" + balanced('(', ')') + ")";
    } else if (c == '{') {
      take();
      braced(p, balanced('{', '}'));
    } else if (c == '\'' && !quoted) {
      take();  // $'...': ANSI-C quoting, kept literally
      p.kind = WordPart::Kind::kLiteral;
      while (pos_ < s_.size() && peek() != '\'') p.text.push_back(take());
      if (pos_ < s_.size()) take();
    } else if (is_name_char(c)) {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        p.text.push_back(take());  // $1: one digit only
      } else {
        while (is_name_char(peek())) p.text.push_back(take());
      }
    } else if (c == '@' || c == '*' || c == '#' || c == '?' || c == '$' || c == '!' || c == '-') {
      p.text.push_back(take());
      p.kind = WordPart::Kind::kOpaque;
      p.text = "$" + p.text;
    } else {
      p.kind = WordPart::Kind::kLiteral;
      p.text = "$";
    }
    return p;
  }

  /// ${NAME}, ${NAME:-x}, ${NAME-x}, ${NAME:=x}, ${NAME[@]}; anything else is opaque.
  static std::string unquoted(std::string text) {
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
        text.back() == text.front()) {
      return text.substr(1, text.size() - 2);
    }
    return text;
  }

  static void braced(WordPart& p, const std::string& body) {
    std::size_t i = 0;
    while (i < body.size() && is_name_char(body[i])) ++i;
    p.text = body.substr(0, i);
    std::string_view rest = std::string_view(body).substr(i);
    if (rest == "[@]" || rest == "[*]") {
      p.all_elements = true;
    } else if (rest.starts_with(":-") || rest.starts_with(":=")) {
      p.has_fallback = true;
      p.fallback = unquoted(std::string(rest.substr(2)));
    } else if (rest.starts_with("-") || rest.starts_with("=")) {
      p.has_fallback = true;
      p.fallback = unquoted(std::string(rest.substr(1)));
    } else if (!rest.empty() || p.text.empty()) {
      p.kind = WordPart::Kind::kOpaque;
      p.text = "${" + body + "}";
    }
  }

  WordPart backtick(bool quoted) {
    WordPart p = WordPart::make(WordPart::Kind::kOpaque, "`", line_, quoted);
    take();
    while (pos_ < s_.size() && peek() != '`') p.text.push_back(take());
    if (pos_ < s_.size()) take();
    p.text.push_back('`');
    return p;
  }

  void open_array() {
    word_.is_array = true;
    if (command_.words.empty()) command_.line = word_.line;
    command_.words.push_back(std::move(word_));
    word_ = ShellWord{};
    started_ = false;
    array_ = &command_.words.back();
  }

  void close_array() {
    end_word();
    array_ = nullptr;
  }

  void redirection() {
    // "2>&1", "2> log": a word of digits right before the operator is its file descriptor.
    if (started_ && word_.is_literal() && !word_.literal_text().empty() &&
        word_.literal_text().find_first_not_of("0123456789") == std::string::npos) {
      word_ = ShellWord{};
      started_ = false;
    }
    end_word();
    const char op = take();
    if (op == '<' && peek() == '<') {
      take();
      const bool strip_tabs = peek() == '-';
      if (strip_tabs) take();
      while (peek() == ' ' || peek() == '\t') take();
      std::string delimiter;
      while (pos_ < s_.size() && !std::isspace(static_cast<unsigned char>(peek())) &&
             peek() != ';' && peek() != '|' && peek() != '&') {
        const char c = take();
        if (c != '\'' && c != '"' && c != '\\') delimiter.push_back(c);
      }
      heredocs_.push_back({delimiter, strip_tabs});
      return;
    }
    while (peek() == '>' || peek() == '&' || peek() == '|') take();
    if (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-') {
      take();  // >&2, <&-
      return;
    }
    skip_word_ = true;  // the next word is the redirection's file
  }

  void skip_heredocs() {
    for (const auto& [delimiter, strip_tabs] : heredocs_) {
      while (pos_ < s_.size()) {
        const std::size_t start = pos_;
        while (pos_ < s_.size() && peek() != '\n') take();
        std::string_view line = s_.substr(start, pos_ - start);
        if (pos_ < s_.size()) take();
        if (strip_tabs) {
          while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
        }
        if (line == delimiter) break;
      }
    }
    heredocs_.clear();
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  int line_ = 1;
  ShellScript script_;
  ShellCommand command_;
  ShellWord word_;
  ShellWord* array_ = nullptr;
  bool started_ = false;
  bool skip_word_ = false;
  bool seen_command_ = false;
  std::vector<std::pair<std::string, bool>> heredocs_;
};

}  // namespace

ShellScript lex_shell(std::string_view text) { return Lexer(text).run(); }

}  // namespace bigmac::audit
