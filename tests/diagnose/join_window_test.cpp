#include "diagnose/join_window.h"

#include <gtest/gtest.h>

#include <string>

namespace bigmac::diagnose {
namespace {

logs::TextLine text_line(std::int64_t line, int rank, std::string text) {
  logs::TextLine l;
  l.at = logs::RecordOrigin{rank, line, 0};
  l.text = std::move(text);
  return l;
}

// Opens `line`, returns the window text, commits.
std::string push(JoinWindow& w, const logs::TextLine& line) {
  w.open(line);
  std::string text(w.text());
  w.commit();
  return text;
}

TEST(JoinWindow, UnrankedLinesContinueTheLinesRightBeforeThem) {
  JoinWindow w;
  EXPECT_EQ(push(w, text_line(1, -1, "alpha ")), "alpha ");
  const auto beta = text_line(2, -1, "beta");
  w.open(beta);
  EXPECT_EQ(w.text(), "alpha beta");
  EXPECT_EQ(w.seam(), 6u);
  ASSERT_EQ(w.pieces().size(), 2u);
  EXPECT_EQ(w.piece_at(0), 0u);
  EXPECT_EQ(w.piece_at(5), 0u);
  EXPECT_EQ(w.piece_at(6), 1u);
  EXPECT_EQ(w.pieces()[0].line, 1);
  w.commit();
  // Line 4 does not follow line 3 directly (a record was line 3): nothing to continue.
  EXPECT_EQ(push(w, text_line(4, -1, "gamma")), "gamma");
}

TEST(JoinWindow, RankedLinesContinueTheirRankAcrossOtherRanksLines) {
  JoinWindow w;
  push(w, text_line(1, 0, "r0a "));
  push(w, text_line(2, 1, "r1a "));
  EXPECT_EQ(push(w, text_line(3, 0, "r0b")), "r0a r0b");
  EXPECT_EQ(push(w, text_line(4, 1, "r1b")), "r1a r1b");
  // A line of rank 0 after a gap that was not all text lines (line 6 is missing: a record).
  push(w, text_line(5, 2, "r2a"));
  EXPECT_EQ(push(w, text_line(7, 0, "r0c")), "r0c");
}

TEST(JoinWindow, EarlierLinesAreCutToTheTailBudget) {
  JoinWindow w;
  const std::string long_line(1000, 'x');
  push(w, text_line(1, -1, long_line));
  push(w, text_line(2, -1, "y"));
  const auto last = text_line(3, -1, "z");
  w.open(last);
  EXPECT_EQ(w.text().size(), JoinWindow::kTailBytes + 1);
  EXPECT_EQ(w.text().substr(w.text().size() - 2), "yz");
  EXPECT_EQ(*w.pieces().front().text, long_line);  // evidence keeps the whole line
  w.commit();
}

TEST(JoinWindow, ResetStartsAFreshFile) {
  JoinWindow w;
  push(w, text_line(1, -1, "a"));
  w.reset();
  EXPECT_EQ(push(w, text_line(2, -1, "b")), "b");
}

}  // namespace
}  // namespace bigmac::diagnose
