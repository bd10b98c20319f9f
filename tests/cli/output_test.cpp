// What a run prints, end to end through a pipe: one line per gate and the report's path on a
// pass, the failing gate's card once on a failure, colour only when asked for, -q the verdict
// alone; and the quick start passes while another program holds torchrun's port 29500.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "run_all_fixture.h"

namespace bigmac::testing::e2e {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// Holds 127.0.0.1:`port` listening for as long as it lives (if nobody else holds it already;
/// then it is held anyway).
class PortHolder {
 public:
  explicit PortHolder(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    held_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::listen(fd_, 1) == 0;
  }
  ~PortHolder() {
    if (fd_ >= 0) ::close(fd_);
  }
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

TEST_F(RunAll, APassingDemoPrintsOneLinePerGateAndTheReportWhileAnotherProgramHolds29500) {
  const PortHolder torchruns_port(29500);
  // The quick start as a user types it: no port set (the fixture's own is overridden back).
  const ProgramResult r = bringup(run_args(), {"launch.master_port=0"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  const std::vector<std::string> gates = {"single", "dp", "pp2", "shapes", "target"};
  for (std::size_t i = 0; i < gates.size(); ++i) {
    EXPECT_EQ(lines[i].rfind("[" + std::to_string(i + 1) + "/5] " + gates[i], 0), 0u) << lines[i];
    EXPECT_THAT(lines[i], HasSubstr(" passed ")) << lines[i];
  }
  EXPECT_THAT(lines[0], HasSubstr("baseline recorded"));
  EXPECT_THAT(lines[5], HasSubstr("5 gates passed; report: "));
  EXPECT_THAT(lines[5], HasSubstr("/run/report.html"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "report.html"));
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "a pipe gets plain text";
}

TEST_F(RunAll, AFailingGatePrintsItsCardOnceColouredOnlyWhenAskedAndQuietPrintsTheVerdictAlone) {
  std::vector<std::string> args = run_args();
  args.insert(args.end(), {"--until", "dp", "--color", "always"});
  const ProgramResult coloured = bringup(args, {"faults.lr_scale_by_world=true"});
  ASSERT_EQ(coloured.exit_code, 1) << coloured.out << coloured.err;
  EXPECT_EQ(count_of(coloured.out, "Symptom:"), 1u) << coloured.out;
  EXPECT_THAT(coloured.out, HasSubstr("\x1b[1;31mFAILED"));
  EXPECT_THAT(coloured.out, HasSubstr("[2/5] dp      \x1b[1;31mFAILED\x1b[0m"));
  EXPECT_THAT(coloured.out, HasSubstr("Resume:     "));
  EXPECT_THAT(coloured.out, HasSubstr("report: "));

  fs::remove_all(root_ / "run");
  args = run_args();
  args.insert(args.end(), {"--until", "dp", "-q"});
  const ProgramResult quiet = run_program(argv_of(args, {"faults.lr_scale_by_world=true"}),
                                          {{"NO_COLOR", "1"}}, BIGMAC_SOURCE_DIR);
  ASSERT_EQ(quiet.exit_code, 1) << quiet.out << quiet.err;
  EXPECT_EQ(quiet.out.rfind("FAILED gate 2 dp", 0), 0u) << quiet.out;
  EXPECT_EQ(count_of(quiet.out, "Symptom:"), 1u);
  EXPECT_EQ(quiet.out.find("[1/5]"), std::string::npos) << "no gate lines under -q";
  EXPECT_EQ(quiet.out.find('\x1b'), std::string::npos);

  // The next step status prints is one to paste: this binary, not on PATH, by its path.
  const ProgramResult status = run_program({kBinary, "status", (root_ / "run").string()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("bin/bigmac-bringup resume ")) << status.out;
}

}  // namespace
}  // namespace bigmac::testing::e2e
