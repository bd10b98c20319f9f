#include "audit/audit_hint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bigmac::audit {
namespace {

using ::testing::HasSubstr;

TEST(AuditHint, PointsAtTheAuditCommandForTheProject) {
  EXPECT_THAT(settings_applied_hint("examples/torch_trainer"),
              HasSubstr("`bigmac-bringup audit examples/torch_trainer`"));
  EXPECT_THAT(settings_applied_hint(), HasSubstr("`bigmac-bringup audit PATH`"));
  EXPECT_THAT(settings_applied_hint(), HasSubstr("did not take effect"));
}

}  // namespace
}  // namespace bigmac::audit
