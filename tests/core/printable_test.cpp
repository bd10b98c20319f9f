#include "core/printable.h"

#include <gtest/gtest.h>

namespace bigmac {
namespace {

using namespace std::string_view_literals;

TEST(PrintableTest, PlainTextStaysAsItIs) {
  EXPECT_EQ(printable("gate dp: loss 2.31 ✅ é"), "gate dp: loss 2.31 ✅ é");
  EXPECT_EQ(printable(""), "");
}

// Issue 30 item 14: a stage title with ESC[2J cleared the screen; a file name with a newline
// split audit's table; an OSC sequence set the terminal's title.
TEST(PrintableTest, NoControlCharacterReachesTheTerminal) {
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("x\ny\r\tz"), "x\\ny\\r\\tz");
  EXPECT_EQ(printable("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(printable("nul\0del\x7f"sv), "nul\\x00del\\x7f");
  EXPECT_EQ(printable("csi\xc2\x9b"
                      "2J"),
            "csi\\u009b2J");  // the one-character CSI (C1)
  EXPECT_EQ(printable("bad\xff"), "bad\\xff");
}

}  // namespace
}  // namespace bigmac
