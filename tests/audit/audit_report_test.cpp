#include "audit/audit_report.h"

#include <gtest/gtest.h>

namespace bigmac::audit {
namespace {

// Issue 30 item 14: a file name with a newline split audit's table, and one with an escape
// sequence reached the terminal.
TEST(AuditReport, TheProjectsTextNeverReachesTheTerminalRaw) {
  ProjectAudit audit;
  audit.facts.files = {"conf/a\nb.yaml"};
  Place write = Place::at("conf/a\nb.yaml", 1, Setting::kWorldSize, PlaceKind::kWrite,
                          Source::kConfigFile, config::Layer::kLaunch);
  write.value = SettingValue::from_text("8\x1b[2J");
  audit.facts.places.push_back(write);
  audit.facts.places.push_back(Place::at("train\x1b]0;x\x07.py", 3, Setting::kWorldSize,
                                         PlaceKind::kRead, Source::kCode, config::Layer::kLaunch));
  audit.unchecked.push_back("run of conf/a\nb.yaml");
  const std::string text = audit_text(audit);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("conf/a\\nb.yaml:1 = 8\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("train\\x1b]0;x\\x07.py:3"), std::string::npos) << text;
  EXPECT_NE(text.find("  - run of conf/a\\nb.yaml\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace bigmac::audit
