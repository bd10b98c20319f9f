#include "core/utf8.h"

#include <fmt/format.h>

namespace bigmac {

std::size_t utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (at >= text.size()) return 0;
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the first continuation byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Back over continuation bytes (at most three) to the lead byte of the cut sequence; keep
  // that sequence only when it ends before the cut.
  std::size_t lead = end;
  while (lead > 0 && end - lead < 4 && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80)
    --lead;
  if (lead < end && (static_cast<unsigned char>(text[lead]) & 0xC0) != 0x80) end = lead;
  return text.substr(0, end);
}

std::optional<TextFlaw> find_text_flaw(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\0') return TextFlaw{i, "a NUL byte"};
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) {
      return TextFlaw{
          i, fmt::format("byte 0x{:02x} (not UTF-8)", static_cast<unsigned char>(text[i]))};
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace bigmac
