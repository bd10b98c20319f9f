// core/checked_integer: the one integer parser, and narrowing that refuses instead of wrapping
// (issue 20, D2).

#include "core/checked_integer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace bigmac {
namespace {

TEST(CheckedInteger, ParsesWholeTextWithinRange) {
  EXPECT_EQ(parse_integer("42", 0, 100), 42);
  EXPECT_EQ(parse_integer("-1", -1, 1), -1);
  EXPECT_EQ(parse_integer("ff", 0, 255, 16), 255);
  EXPECT_EQ(parse_integer("9223372036854775807", INT64_MIN, INT64_MAX), INT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "0x10", "1.5", "abc", "12a", "-"}) {
    EXPECT_FALSE(parse_integer(bad, INT64_MIN, INT64_MAX)) << '"' << bad << '"';
  }
  EXPECT_FALSE(parse_integer("101", 0, 100));
  // strtol would clamp this to LONG_MAX; from_chars reports it.
  EXPECT_FALSE(parse_integer("99999999999999999999", INT64_MIN, INT64_MAX));
}

TEST(CheckedInteger, ParseAsTheTypesRange) {
  EXPECT_EQ(parse_integer_as<int>("2147483647"), std::numeric_limits<int>::max());
  EXPECT_FALSE(parse_integer_as<int>("2147483648"));
  EXPECT_FALSE(parse_integer_as<std::uint16_t>("-1"));
  EXPECT_EQ(parse_integer_as<std::uint16_t>("65535"), 65535);
}

TEST(CheckedInteger, NarrowRefusesWhatACastWouldWrap) {
  EXPECT_EQ(narrow<int>(std::int64_t{2147483647}), 2147483647);
  EXPECT_FALSE(narrow<int>(std::int64_t{2147483648}));
  EXPECT_FALSE(narrow<int>(std::int64_t{4294967300}));  // a cast gives 4
  EXPECT_FALSE(narrow<std::uint32_t>(-1));
  EXPECT_FALSE(narrow<std::int64_t>(std::numeric_limits<std::uint64_t>::max()));
}

TEST(CheckedInteger, ArithmeticReportsOverflow) {
  EXPECT_EQ(checked_multiply(65536, 65536), std::int64_t{1} << 32);
  EXPECT_FALSE(checked_multiply(INT64_MAX, 2));
  EXPECT_FALSE(checked_add(INT64_MAX, 1));
  EXPECT_EQ(checked_add(INT64_MAX, -1), INT64_MAX - 1);
  EXPECT_FALSE(checked_subtract(INT64_MIN, 1));
  EXPECT_FALSE(checked_subtract(INT64_MAX, -1));
  EXPECT_EQ(checked_subtract(5, 7), -2);
}

}  // namespace
}  // namespace bigmac
