// report.html in a real browser: headless Chromium (Debian package `chromium`, which
// scripts/test installs) renders the page, takes a screenshot and dumps the DOM in one run.
// A passed run: the DOM holds the SVG plots with their polylines and the pipeline schedule,
// and the screenshot shows ink. A failed run: the verdict card comes first and fits a
// 1280×800 window, then the failing metric's chart, the failed gate open, passed gates closed.
// Skipped (with a message) only when chromium is absent.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include "png_image.h"
#include "report/html_report.h"
#include "report/report_input.h"
#include "report_fixture.h"
#include "testing/run_program.h"

namespace bigmac::report {
namespace {

using testing::fixtures;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Pixels within `tolerance` (per channel) of an sRGB colour of the page's CSS.
std::size_t pixels_near(const testing::PngImage& image, int r, int g, int b, int tolerance) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 2 < image.rgb.size(); i += 3) {
    if (std::abs(image.rgb[i] - r) <= tolerance && std::abs(image.rgb[i + 1] - g) <= tolerance &&
        std::abs(image.rgb[i + 2] - b) <= tolerance) {
      ++n;
    }
  }
  return n;
}

/// Chromium's helpers (crashpad) double-fork away from their browser; as a child subreaper
/// this test process inherits them and reaps them, so none is left to init as a zombie.
class Subreaper {
 public:
  Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }

  /// Reaps every remaining descendant, waiting up to `patience` for them to exit on their own;
  /// returns how many had to be killed.
  int reap_all(std::chrono::seconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid < 0) return 0;  // ECHILD: nothing left
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int killed = 0;
    std::ifstream children("/proc/self/task/" + std::to_string(gettid()) + "/children");
    for (pid_t pid = 0; children >> pid;) {
      kill(pid, SIGKILL);
      ++killed;
    }
    while (waitpid(-1, nullptr, 0) > 0) {
    }
    return killed;
  }
};

/// What headless Chromium made of a page: its DOM after layout and a screenshot of the window.
struct Rendered {
  std::string dom;
  std::optional<testing::PngImage> image;
};

/// Renders `html` in headless Chromium in a window of `width`×`height` with a fresh profile;
/// nothing reaches the network (the page loads nothing, and every background fetch is off).
/// Fails the test (and returns nothing) when Chromium does not run or leaves helpers behind.
std::optional<Rendered> render_in_chromium(const std::string& html, int width, int height) {
  const std::string chromium = testing::find_program("chromium");
  const std::string timeout = testing::find_program("timeout");
  if (timeout.empty()) {
    ADD_FAILURE() << "coreutils timeout missing";
    return std::nullopt;
  }
  testing::ScratchDir dir;
  const auto page = dir.path() / "report.html";
  const auto png = dir.path() / "shot.png";
  testing::spill(page, html);
  // timeout signals its whole process group, so no Chromium helper outlives a hang.
  Subreaper subreaper;
  const auto result = bigmac::testing::run_program(
      {timeout,
       "-k",
       "5",
       "90",
       chromium,
       "--headless",
       "--no-sandbox",
       "--disable-gpu",
       "--disable-quic",
       "--no-first-run",
       "--disable-background-networking",
       "--disable-component-update",
       "--disable-sync",
       "--disable-dev-shm-usage",
       "--disable-crash-reporter",
       "--disable-breakpad",
       "--user-data-dir=" + (dir.path() / "profile").string(),
       "--screenshot=" + png.string(),
       "--window-size=" + std::to_string(width) + "," + std::to_string(height),
       "--dump-dom",
       "file://" + page.string()},
      {{"HOME", dir.path().string()}});
  EXPECT_EQ(subreaper.reap_all(std::chrono::seconds(10)), 0) << "Chromium helpers outlived it";
  if (result.exit_code != 0) {
    ADD_FAILURE() << "chromium exited " << result.exit_code << ": " << result.err;
    return std::nullopt;
  }
  return Rendered{result.out, testing::decode_png(testing::slurp(png))};
}

bool chromium_missing() { return testing::find_program("chromium").empty(); }

constexpr const char* kNoChromium =
    "chromium not installed (Debian package `chromium`; scripts/test installs it); the browser "
    "test of report.html did not run";

TEST(HtmlInBrowser, ChromiumRendersThePlotsAndTheSchedule) {
  if (chromium_missing()) GTEST_SKIP() << kNoChromium;
  auto input = load_report_input(fixtures() / "passed", fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  const auto rendered = render_in_chromium(render_html(*input), 1200, 2000);
  ASSERT_TRUE(rendered);

  const std::string& dom = rendered->dom;
  // Three per gate in its section, and each gate's loss in the overview at the top.
  EXPECT_EQ(count(dom, "<svg class=\"plot\""), 5u * 3u + 5u) << dom.substr(0, 2000);
  EXPECT_GE(count(dom, "<polyline class=\"run\""), 20u);
  EXPECT_GE(count(dom, "<polyline class=\"baseline\""), 20u);
  EXPECT_EQ(count(dom, "<section class=\"overview\" id=\"loss\">"), 1u);
  EXPECT_GE(count(dom, "<a href=\"01-single.1/rank0.log\">"), 1u) << "the rank logs are linked";
  EXPECT_EQ(count(dom, "<svg class=\"schedule\""), 2u);  // pp2 and shapes
  EXPECT_GE(count(dom, "<rect class=\"mb F\""), 2u * 2u * 4u);
  EXPECT_EQ(count(dom, "<svg class=\"timeline\""), 1u);

  ASSERT_TRUE(rendered->image) << "screenshot is not an 8-bit PNG";
  const testing::PngImage& image = *rendered->image;
  EXPECT_EQ(image.width, 1200u);
  const std::size_t total = std::size_t{image.width} * image.height;
  const std::size_t white = pixels_near(image, 255, 255, 255, 8);
  EXPECT_LT(white, total * 98 / 100) << "screenshot is (nearly) blank";
  // Every passed gate is collapsed, but the overview paints every gate's loss at the top: the
  // run's curves (blue) and the baseline's (orange) show without a click, beside the timeline.
  EXPECT_GT(pixels_near(image, 0x81, 0xc9, 0x95, 20), 500u) << "no passed bar in the timeline";
  EXPECT_GT(pixels_near(image, 0x1a, 0x73, 0xe8, 30), 500u) << "no run curve painted";
  EXPECT_GT(pixels_near(image, 0xe3, 0x74, 0x00, 30), 300u) << "no baseline curve painted";
}

/// Rows of the image with at least `min_pixels` pixels near the colour, grouped into runs of
/// consecutive rows: (first row, last row) of each run.
std::vector<std::pair<std::uint32_t, std::uint32_t>> colour_rows(const testing::PngImage& image,
                                                                 int r, int g, int b,
                                                                 std::size_t min_pixels) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
  for (std::uint32_t y = 0; y < image.height; ++y) {
    std::size_t n = 0;
    for (std::uint32_t x = 0; x < image.width; ++x) {
      const std::size_t i = (std::size_t{y} * image.width + x) * 3;
      n += std::abs(image.rgb[i] - r) <= 12 && std::abs(image.rgb[i + 1] - g) <= 12 &&
                   std::abs(image.rgb[i + 2] - b) <= 12
               ? 1
               : 0;
    }
    if (n < min_pixels) continue;
    if (!runs.empty() && runs.back().second + 1 == y) {
      runs.back().second = y;
    } else {
      runs.emplace_back(y, y);
    }
  }
  return runs;
}

TEST(HtmlInBrowser, TheFailedRunShowsItsVerdictCardWithoutScrolling) {
  if (chromium_missing()) GTEST_SKIP() << kNoChromium;
  auto input = load_report_input(fixtures() / "failed", fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  // A laptop screen: the card must fit above the fold.
  const auto rendered = render_in_chromium(render_html(*input), 1280, 800);
  ASSERT_TRUE(rendered);

  // Document order: the card, the failing metric, the failed gate open, passed gates closed.
  const std::string& dom = rendered->dom;
  const auto card = dom.find("<section class=\"card\" id=\"verdict\">");
  const auto focus = dom.find("<section class=\"focus\">");
  const auto failed = dom.find("<details class=\"gate failed\" id=\"gate-pp2\" open=\"\">");
  const auto passed = dom.find("<details class=\"gate passed\" id=\"gate-single\">");
  ASSERT_NE(card, std::string::npos) << dom.substr(0, 3000);
  ASSERT_NE(focus, std::string::npos);
  ASSERT_NE(failed, std::string::npos) << dom.substr(0, 3000);
  ASSERT_NE(passed, std::string::npos);
  EXPECT_LT(card, focus);
  EXPECT_LT(focus, failed);
  EXPECT_LT(failed, passed);
  EXPECT_EQ(count(dom, "<details class=\"gate passed\""), 2u);
  EXPECT_EQ(count(dom, "open=\"\""), 1u) << "only the failed gate is expanded";

  // On screen: the card's frame (#b3261e, 2 px, as wide as the page) shows its top and its
  // bottom edge inside the 800-pixel window, so nothing of it needs scrolling.
  ASSERT_TRUE(rendered->image) << "screenshot is not an 8-bit PNG";
  const testing::PngImage& image = *rendered->image;
  ASSERT_EQ(image.width, 1280u);
  ASSERT_EQ(image.height, 800u);
  const auto edges = colour_rows(image, 0xb3, 0x26, 0x1e, 800);
  ASSERT_GE(edges.size(), 2u) << "the card's bottom edge is below the window (or no card)";
  EXPECT_LT(edges.front().first, 150u) << "the card does not open the page";
  EXPECT_GT(edges[1].first, edges.front().second + 100) << "the card is implausibly short";
  EXPECT_LT(edges[1].second, 799u);
  // The chart of the failing metric starts on the first screen too: the run's line is drawn.
  EXPECT_GT(pixels_near(image, 0x1a, 0x73, 0xe8, 40), 100u) << "no run line (blue) visible";
  EXPECT_GT(pixels_near(image, 0xe3, 0x74, 0x00, 40), 50u) << "no baseline line (orange) visible";
}

}  // namespace
}  // namespace bigmac::report
