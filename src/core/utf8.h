#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace bigmac {

/// Length of the valid UTF-8 sequence starting at `at` (1 for an ASCII byte), or 0 when the
/// bytes there are not one: a stray continuation byte, an overlong form, a surrogate, a code
/// point past U+10FFFF, or a sequence cut off at the end.
std::size_t utf8_sequence(std::string_view text, std::size_t at);

/// The longest start of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
/// sequence: a line kept to a length stays whole characters.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

/// The first byte of a string that no process can be handed intact: a NUL (argv and the
/// environment end a string there) or a byte that is not valid UTF-8.
struct TextFlaw {
  std::size_t offset = 0;  ///< of the byte, from 0
  std::string what;        ///< "a NUL byte", "byte 0xff (not UTF-8)"
};

/// The first flaw of `text`, or nullopt when it is clean.
std::optional<TextFlaw> find_text_flaw(std::string_view text);

}  // namespace bigmac
