#include "logs/contract_names.h"

#include <gtest/gtest.h>

#include "logs/field_bag.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

TEST(ContractNames, EveryFieldNameIsFoundAsItsKey) {
  for (std::size_t k = 0; k < kFieldKeyCount; ++k) {
    const auto key = static_cast<FieldKey>(k);
    ASSERT_EQ(find_key(key_name(key)), key) << key_name(key);
  }
  EXPECT_FALSE(find_key("").has_value());
  EXPECT_FALSE(find_key("global_steps").has_value());
  EXPECT_FALSE(find_key("Loss").has_value());
}

TEST(ContractNames, EveryEventNameBuildsItsRecord) {
  for (std::size_t e = 0; e < kEventKindCount; ++e) {
    const std::string_view name = event_kind_name(static_cast<EventKind>(e));
    // The fields every event requires: a step number, a loss value and a phase (F/B of a
    // micro-batch, start/end of a heartbeat or an evaluation).
    const std::string phase = name == "mb" ? "F" : "start";
    auto parsed =
        testing::parse_text("{\"ev\":\"" + std::string(name) +
                            "\",\"global_step\":0,\"value\":1,\"phase\":\"" + phase + "\"}\n");
    ASSERT_EQ(parsed.records.size(), 1u) << name;
    EXPECT_EQ(parsed.stats.records, 1) << name;
    EXPECT_EQ(event_name(parsed.records[0]), name);
  }
}

}  // namespace
}  // namespace bigmac::logs
