#include "launch/error_line.h"

#include <gtest/gtest.h>

#include "core/utf8.h"

namespace bigmac::launch {
namespace {

TEST(ErrorLine, PythonTracebackGivesItsException) {
  ErrorLine e;
  e.add("Traceback (most recent call last):");
  e.add("  File \"train.py\", line 3, in <module>");
  e.add("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x64 and 32x64)");
  e.add("");
  EXPECT_EQ(e.best(), "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x64 and 32x64)");
}

TEST(ErrorLine, MentionOfAnErrorBeatsTheLastLine) {
  ErrorLine e;
  e.add("warning: slow");
  e.add("error: failing with 3");
  e.add("bye");
  EXPECT_EQ(e.best(), "error: failing with 3");
}

TEST(ErrorLine, LastLineWhenNothingLooksLikeAnError) {
  ErrorLine e;
  EXPECT_EQ(e.best(), "");
  e.add("one");
  e.add("  two  ");
  EXPECT_EQ(e.best(), "two");
}

TEST(ErrorLine, ProseWithColonIsNotAnException) {
  ErrorLine e;
  e.add("Note that this Error: is prose");
  e.add("c10::Error: something");
  EXPECT_EQ(e.best(), "c10::Error: something");
}

}  // namespace
TEST(ErrorLine, ALongLineIsKeptToWholeCharacters) {
  // A progress bar of 3-byte blocks, longer than what is kept: the cut falls between blocks.
  std::string bar = "RuntimeError: ";
  for (int i = 0; i < 300; ++i) bar += "\xe2\x96\x88";
  ErrorLine e;
  e.add(bar);
  const std::string kept = e.best();
  EXPECT_LE(kept.size(), 500u);
  EXPECT_GE(kept.size(), 498u);
  EXPECT_FALSE(find_text_flaw(kept)) << kept.size();
}

}  // namespace bigmac::launch
