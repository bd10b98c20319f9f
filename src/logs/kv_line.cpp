#include "logs/kv_line.h"

#include <algorithm>

namespace bigmac::logs {

bool read_kv_line(std::string_view text, FieldBag& bag, std::string& error) {
  bag.clear();
  std::size_t i = 0;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i >= text.size()) return true;
    std::size_t key_start = i;
    while (i < text.size() && text[i] != '=' && text[i] != ' ' && text[i] != '\t') ++i;
    if (i >= text.size() || text[i] != '=' || i == key_start) {
      std::string_view token = text.substr(key_start, std::min<std::size_t>(i - key_start, 40));
      error = "expected key=value, got '" + std::string(token) + "'";
      return false;
    }
    std::string_view name = text.substr(key_start, i - key_start);
    ++i;
    std::string_view value;
    bool quoted = false;
    std::string unescaped;
    if (i < text.size() && text[i] == '"') {
      quoted = true;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          ++i;
          unescaped.push_back(text[i] == 'n' ? '\n' : text[i] == 't' ? '\t' : text[i]);
        } else {
          unescaped.push_back(text[i]);
        }
      }
      if (i >= text.size()) {
        error = "unclosed quote in field " + std::string(name);
        return false;
      }
      ++i;
    } else if (i < text.size() && text[i] == '[') {
      std::size_t start = i;
      while (i < text.size() && text[i] != ']') ++i;
      if (i >= text.size()) {
        error = "unclosed list in field " + std::string(name);
        return false;
      }
      ++i;
      value = text.substr(start, i - start);
    } else {
      std::size_t start = i;
      while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
      value = text.substr(start, i - start);
    }
    std::optional<FieldKey> key = find_key(name);
    if (!key) continue;
    Slot& slot = bag.set(*key);
    if (quoted) {
      slot.kind = Slot::Kind::kString;
      slot.s = bag.own(std::move(unescaped));
    } else {
      slot.kind = Slot::Kind::kText;
      slot.s = value;
    }
  }
}

}  // namespace bigmac::logs
