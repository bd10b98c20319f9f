#include "diagnose/message_template.h"

#include <cctype>

namespace bigmac::diagnose {
namespace {

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') return false;
  }
  return true;
}

// Walks the text once; `on_text` receives literal pieces, `on_name` placeholders.
template <class OnText, class OnName>
tl::expected<void, std::string> walk(std::string_view text, OnText on_text, OnName on_name) {
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      on_text(std::string_view(&text[i], 1));
      i += 2;
      continue;
    }
    if (c == '}') return tl::unexpected(std::string("a lone `}` (write `}}` for a brace)"));
    if (c != '{') {
      const std::size_t next = text.find_first_of("{}", i);
      const std::size_t end = next == std::string_view::npos ? text.size() : next;
      on_text(text.substr(i, end - i));
      i = end;
      continue;
    }
    const std::size_t close = text.find('}', i + 1);
    if (close == std::string_view::npos) return tl::unexpected(std::string("an unclosed `{`"));
    const std::string_view name = text.substr(i + 1, close - i - 1);
    if (!valid_name(name)) {
      return tl::unexpected("`{" + std::string(name) +
                            "}` is not a placeholder (use {1} or {name}; `{{` for a brace)");
    }
    on_name(name);
    i = close + 1;
  }
  return {};
}

}  // namespace

tl::expected<std::vector<std::string>, std::string> template_placeholders(std::string_view text) {
  std::vector<std::string> names;
  auto ok = walk(
      text, [](std::string_view) {}, [&](std::string_view name) { names.emplace_back(name); });
  if (!ok) return tl::unexpected(ok.error());
  return names;
}

std::string fill_template(std::string_view text, const TemplateValues& values) {
  std::string out;
  out.reserve(text.size());
  auto ok = walk(
      text, [&](std::string_view piece) { out += piece; },
      [&](std::string_view name) {
        auto it = values.find(name);
        out += it == values.end() || it->second.empty() ? std::string("?") : it->second;
      });
  // The catalog loader rejects malformed templates; a raw text is the safe fallback.
  return ok ? out : std::string(text);
}

}  // namespace bigmac::diagnose
