#include "diagnose/message_template.h"

#include <gtest/gtest.h>

namespace bigmac::diagnose {
namespace {

TEST(MessageTemplate, ListsPlaceholdersInOrder) {
  auto names = template_placeholders("rank {rank} waited {1} ms in {op}");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"rank", "1", "op"}));
}

TEST(MessageTemplate, DoubledBracesAreLiteral) {
  auto names = template_placeholders("a {{literal}} brace");
  ASSERT_TRUE(names);
  EXPECT_TRUE(names->empty());
  EXPECT_EQ(fill_template("a {{literal}} {x}", {{"x", "y"}}), "a {literal} y");
}

TEST(MessageTemplate, RejectsMalformedBraces) {
  EXPECT_FALSE(template_placeholders("unclosed {rank"));
  EXPECT_FALSE(template_placeholders("lone } brace"));
  EXPECT_FALSE(template_placeholders("empty {} placeholder"));
  EXPECT_FALSE(template_placeholders("spaced { name }"));
}

TEST(MessageTemplate, MissingValuesPrintAsQuestionMark) {
  EXPECT_EQ(fill_template("port {port} held by {pid}", {{"port", "29500"}}),
            "port 29500 held by ?");
}

}  // namespace
}  // namespace bigmac::diagnose
