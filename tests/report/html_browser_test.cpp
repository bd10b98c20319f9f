// report.html in a real browser: headless Chromium (Debian package `chromium`) renders the
// page, takes a screenshot and dumps the DOM in one run. The screenshot must show ink, in
// particular the run's and the baseline's line colours; the DOM must hold the SVG plots with
// their polylines and the pipeline schedule. Skipped (with a message) when chromium is absent.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <fstream>
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

TEST(HtmlInBrowser, ChromiumRendersThePlotsAndTheSchedule) {
  std::string chromium = testing::find_program("chromium");
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed (Debian package `chromium`); the browser test of "
                    "report.html did not run";
  }
  const std::string timeout = testing::find_program("timeout");
  ASSERT_FALSE(timeout.empty()) << "coreutils timeout missing";
  auto input = load_report_input(fixtures() / "passed", fixtures() / "baseline.json");
  ASSERT_TRUE(input) << input.error().format();
  testing::ScratchDir dir;
  const auto page = dir.path() / "report.html";
  const auto png = dir.path() / "shot.png";
  testing::spill(page, render_html(*input));

  // timeout signals its whole process group, so no Chromium helper outlives a hang.
  Subreaper subreaper;
  const auto result =
      bigmac::testing::run_program({timeout,
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
                                    "--window-size=1200,2000",
                                    "--dump-dom",
                                    "file://" + page.string()},
                                   {{"HOME", dir.path().string()}});
  EXPECT_EQ(subreaper.reap_all(std::chrono::seconds(10)), 0) << "Chromium helpers outlived it";
  ASSERT_EQ(result.exit_code, 0) << result.err;

  const std::string& dom = result.out;
  EXPECT_EQ(count(dom, "<svg class=\"plot\""), 5u * 3u) << dom.substr(0, 2000);
  EXPECT_GE(count(dom, "<polyline class=\"run\""), 15u);
  EXPECT_GE(count(dom, "<polyline class=\"baseline\""), 15u);
  EXPECT_EQ(count(dom, "<svg class=\"schedule\""), 2u);  // pp2 and shapes
  EXPECT_GE(count(dom, "<rect class=\"mb F\""), 2u * 2u * 4u);
  EXPECT_EQ(count(dom, "<svg class=\"timeline\""), 1u);

  auto image = testing::decode_png(testing::slurp(png));
  ASSERT_TRUE(image) << "screenshot is not an 8-bit PNG: " << png;
  EXPECT_EQ(image->width, 1200u);
  const std::size_t total = std::size_t{image->width} * image->height;
  const std::size_t white = pixels_near(*image, 255, 255, 255, 8);
  EXPECT_LT(white, total * 98 / 100) << "screenshot is (nearly) blank";
  EXPECT_GT(pixels_near(*image, 0x1a, 0x73, 0xe8, 40), 200u) << "no run line (blue) visible";
  EXPECT_GT(pixels_near(*image, 0xe3, 0x74, 0x00, 40), 100u) << "no baseline line (orange) visible";
  EXPECT_GT(pixels_near(*image, 0x81, 0xc9, 0x95, 20), 500u) << "no passed bar in the timeline";
}

}  // namespace
}  // namespace bigmac::report
