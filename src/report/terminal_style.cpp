#include "report/terminal_style.h"

#include <array>

namespace bigmac::report {

std::optional<ColorChoice> parse_color_choice(std::string_view text) {
  if (text == "auto") return ColorChoice::kAuto;
  if (text == "always") return ColorChoice::kAlways;
  if (text == "never") return ColorChoice::kNever;
  return std::nullopt;
}

bool use_color(ColorChoice choice, bool terminal, const char* no_color, const char* term) {
  switch (choice) {
    case ColorChoice::kAlways:
      return true;
    case ColorChoice::kNever:
      return false;
    case ColorChoice::kAuto:
      break;
  }
  if (no_color != nullptr && *no_color != '\0') return false;
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return terminal;
}

std::string paint(std::string_view text, Paint paint, bool on) {
  if (!on || text.empty()) return std::string(text);
  const char* code = "";
  switch (paint) {
    case Paint::kPass:
      code = "\x1b[32m";
      break;
    case Paint::kFail:
      code = "\x1b[1;31m";
      break;
    case Paint::kWarn:
      code = "\x1b[33m";
      break;
    case Paint::kDim:
      code = "\x1b[2m";
      break;
    case Paint::kBold:
      code = "\x1b[1m";
      break;
  }
  return code + std::string(text) + "\x1b[0m";
}

std::string paint_status_word(std::string_view word, bool on) {
  struct Word {
    std::string_view text;
    Paint paint;
  };
  static constexpr std::array<Word, 11> kWords{{{"ok", Paint::kPass},
                                                {"passed", Paint::kPass},
                                                {"FAIL", Paint::kFail},
                                                {"FAILED", Paint::kFail},
                                                {"aborted", Paint::kFail},
                                                {"warn", Paint::kWarn},
                                                {"interrupted", Paint::kWarn},
                                                {"invalidated", Paint::kWarn},
                                                {"skip", Paint::kDim},
                                                {"skipped", Paint::kDim},
                                                {"pending", Paint::kDim}}};
  for (const Word& w : kWords) {
    if (w.text == word) return paint(word, w.paint, on);
  }
  if (word == "not applicable" || word == "not_applicable") return paint(word, Paint::kDim, on);
  return std::string(word);
}

std::string paint_check_lines(std::string_view text, bool on) {
  if (!on) return std::string(text);
  std::string out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // "  ok   name ..." : two spaces, a word of four, a space.
    if (line.size() > 7 && line.substr(0, 2) == "  " && line[2] != ' ') {
      std::string_view word = line.substr(2, 4);
      while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
      const std::string painted = paint_status_word(word, true);
      if (painted.size() != word.size()) {
        out += "  " + painted + std::string(line.substr(2 + word.size()));
        if (nl != std::string_view::npos) out += '\n';
        continue;
      }
    }
    out += line;
    if (nl != std::string_view::npos) out += '\n';
  }
  return out;
}

}  // namespace bigmac::report
