#include "core/utf8.h"

#include <gtest/gtest.h>

namespace bigmac {
namespace {

using namespace std::string_view_literals;

TEST(Utf8Test, SequenceLengths) {
  EXPECT_EQ(utf8_sequence("a", 0), 1u);
  EXPECT_EQ(utf8_sequence("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(utf8_sequence("\xe2\x9c\x85", 0), 3u);      // ✅
  EXPECT_EQ(utf8_sequence("\xf0\x9f\x98\x80", 0), 4u);  // 😀
  EXPECT_EQ(utf8_sequence("\xff", 0), 0u);
  EXPECT_EQ(utf8_sequence("\xc0\xaf", 0), 0u);      // overlong '/'
  EXPECT_EQ(utf8_sequence("\xed\xa0\x80", 0), 0u);  // a surrogate
  EXPECT_EQ(utf8_sequence("\xe2\x9c", 0), 0u);      // cut off
  EXPECT_EQ(utf8_sequence("", 0), 0u);
}

// Issue 30 item 12: a NUL or invalid UTF-8 in a string cannot reach a rank as it was written.
TEST(Utf8Test, TheFirstFlawIsNamedWithItsOffset) {
  EXPECT_FALSE(find_text_flaw("127.0.0.1 é ✅"));
  const auto nul = find_text_flaw("a\0b"sv);
  ASSERT_TRUE(nul);
  EXPECT_EQ(nul->offset, 1u);
  EXPECT_EQ(nul->what, "a NUL byte");
  const auto bad = find_text_flaw("ab\xff\xfe");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->offset, 2u);
  EXPECT_EQ(bad->what, "byte 0xff (not UTF-8)");
}

}  // namespace
TEST(Utf8Test, APrefixNeverEndsInsideACharacter) {
  const std::string_view bar =
      "ab\xe2\x96\x88"
      "cd";  // "ab█cd", the block is 3 bytes
  EXPECT_EQ(utf8_prefix(bar, 2), "ab");
  EXPECT_EQ(utf8_prefix(bar, 3), "ab");
  EXPECT_EQ(utf8_prefix(bar, 4), "ab");
  EXPECT_EQ(utf8_prefix(bar, 5), "ab\xe2\x96\x88");
  EXPECT_EQ(utf8_prefix(bar, 6),
            "ab\xe2\x96\x88"
            "c");
  EXPECT_EQ(utf8_prefix(bar, 100), bar);
  EXPECT_EQ(utf8_prefix("", 0), "");
  // Not UTF-8 to begin with: cut where asked, nothing worse.
  EXPECT_EQ(utf8_prefix("\x80\x80\x80\x80\x80x", 5), "\x80\x80\x80\x80\x80");
}

}  // namespace bigmac
