#include "diagnose/wrapped_pattern.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

namespace bigmac::diagnose {
namespace {

TEST(SpaceTolerant, LiteralSpacesBecomeOptional) {
  EXPECT_EQ(space_tolerant("Address already in use"), "Address ?already ?in ?use");
  const RE2 re(space_tolerant("Address already in use"));
  EXPECT_TRUE(RE2::PartialMatch("RuntimeError: Address alreadyin use", re));
  EXPECT_TRUE(RE2::PartialMatch("RuntimeError: Address already in use", re));
  EXPECT_FALSE(RE2::PartialMatch("RuntimeError: Address not in use", re));
}

TEST(SpaceTolerant, ClassesEscapesAndQuantifiersAreKept) {
  EXPECT_EQ(space_tolerant(R"(\(world_size=(\d+), worker_count=)"),
            R"(\(world_size=(\d+), ?worker_count=)");
  EXPECT_EQ(space_tolerant("[0-9, ]*x"), "[0-9, ]*x");         // a space in a class stays
  EXPECT_EQ(space_tolerant(R"([^\] ]+ y)"), R"([^\] ]+ ?y)");  // `\]` does not end the class
  EXPECT_EQ(space_tolerant("a +b"), "a *b");
  EXPECT_EQ(space_tolerant("a ?b"), "a ?b");
  EXPECT_EQ(space_tolerant(R"(a\s+b)"), R"(a\s*b)");
  EXPECT_EQ(space_tolerant(R"(a\ b)"), R"(a\ ?b)");
  EXPECT_EQ(space_tolerant(R"(\x{20}b)"), R"(\x{20}b)");
  EXPECT_EQ(space_tolerant(R"(\Q a b\E c)"), R"(\Q a b\E ?c)");
  // Every catalog-style pattern stays valid RE2.
  for (const char* p : {R"(Timed out after (?P<s>\d+) seconds waiting for clients\.\s*(?P<j>\d+)/)",
                        R"(size mismatch for (?P<param>[\w.]+): copying a param with shape)",
                        "[[:alpha:] ]+ end"}) {
    RE2 re(space_tolerant(p));
    EXPECT_TRUE(re.ok()) << p << " -> " << space_tolerant(p) << ": " << re.error();
  }
}

TEST(AnchoredToLine, OnlyAnchorsOutsideClasses) {
  EXPECT_TRUE(anchored_to_line("^name: EADDRINUSE"));
  EXPECT_TRUE(anchored_to_line("done$"));
  EXPECT_TRUE(anchored_to_line(R"(\Afoo)"));
  EXPECT_FALSE(anchored_to_line("[^a-z]+ x"));
  EXPECT_FALSE(anchored_to_line(R"(cost \$5)"));
  EXPECT_FALSE(anchored_to_line(R"(a\^b)"));
}

}  // namespace
}  // namespace bigmac::diagnose
