#include "core/printable.h"

#include <fmt/format.h>

#include "core/utf8.h"

namespace bigmac {
namespace {

// The length of the character at `at` when it may be printed as it is, else 0.
std::size_t plain_length(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x20 || lead == 0x7f) return 0;
  const std::size_t length = utf8_sequence(text, at);
  // U+0080..U+009F (C1 controls, CSI among them) are C2 80..C2 9F.
  if (length == 2 && lead == 0xC2 && static_cast<unsigned char>(text[at + 1]) < 0xA0) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = plain_length(text, i);
    if (length == 0) break;
    i += length;
  }
  if (i == text.size()) return std::string(text);
  std::string out(text.substr(0, i));
  while (i < text.size()) {
    const std::size_t length = plain_length(text, i);
    if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\r') {
      out += "\\r";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte == 0xC2 && utf8_sequence(text, i) == 2) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      i += 2;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
    ++i;
  }
  return out;
}

}  // namespace bigmac
