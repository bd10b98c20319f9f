#include "gates/gate_spec.h"

#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using testing::real_specs;

Expected<GateSpec> parse(const std::string& text) {
  auto file = config::parse_data_file(text, "stages/09-test.toml");
  if (!file) return tl::unexpected(file.error());
  return parse_gate_spec(*file);
}

const std::string kMinimal = R"(id = "t"
order = 9

[launch]
nproc = 2

[params]
loss_rel_tol = 1e-4
loss_policy = "relative"

[[checks]]
name = "finite_loss"
)";

TEST(GateSpec, TheFiveGatesLoadInOrder) {
  const auto& specs = real_specs();
  ASSERT_EQ(specs.size(), 5u);
  const char* ids[] = {"single", "dp", "pp2", "shapes", "target"};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(specs[i].id, ids[i]);
    EXPECT_EQ(specs[i].order, static_cast<int>(i) + 1);
    EXPECT_FALSE(specs[i].checks.empty());
  }
  EXPECT_EQ(specs[0].launch.nproc, 1);
  EXPECT_FALSE(specs[1].launch.nproc.has_value());  // "all"
  EXPECT_EQ(specs[2].launch.pp, 2);
  EXPECT_TRUE(specs[3].launch.trace_shapes);
  EXPECT_FALSE(specs[4].launch.pp.has_value());  // "config"
  EXPECT_EQ(find_gate(specs, "3")->id, "pp2");
  EXPECT_EQ(find_gate(specs, "nope"), nullptr);
}

TEST(GateSpec, MinimalFileParses) {
  auto s = parse(kMinimal);
  ASSERT_TRUE(s) << s.error().format();
  EXPECT_EQ(s->route_back, "t");
  EXPECT_EQ(s->key_origins.at("nproc"), "stages/09-test.toml:5:9");
}

TEST(GateSpec, UnknownCheckIsLocatedWithDidYouMean) {
  auto s = parse("id = \"t\"\norder = 1\n[[checks]]\nname = \"finite_los\"\n");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().file, "stages/09-test.toml");
  EXPECT_EQ(s.error().line, 4);
  EXPECT_EQ(s.error().key, "checks[0].name");
  EXPECT_NE(s.error().hint.find("finite_loss"), std::string::npos);
}

TEST(GateSpec, UnknownKeysAndBadTypesAreLocated) {
  auto key = parse("id = \"t\"\norder = 1\ntitel = \"x\"\n[[checks]]\nname = \"finite_loss\"\n");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().line, 3);
  EXPECT_NE(key.error().hint.find("title"), std::string::npos);

  auto nproc = parse(
      "id = \"t\"\norder = 1\n[launch]\nnproc = \"many\"\n[[checks]]\nname = \"finite_loss\"\n");
  ASSERT_FALSE(nproc);
  EXPECT_EQ(nproc.error().format().substr(0, 24), "stages/09-test.toml:4:9:");
  EXPECT_NE(nproc.error().message.find("\"all\""), std::string::npos);

  auto policy = parse(
      "id = \"t\"\norder = 1\n[params]\nloss_policy = \"close\"\n[[checks]]\nname = "
      "\"finite_loss\"\n");
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().key, "params.loss_policy");

  EXPECT_FALSE(parse("id = \"t\"\norder = 1\n"));                          // no checks
  EXPECT_FALSE(parse("order = 1\n[[checks]]\nname = \"finite_loss\"\n"));  // no id
  // micro_batches pins accumulation: rescaling it is contradictory.
  EXPECT_FALSE(
      parse("id = \"t\"\norder = 1\n[launch]\nmicro_batches = 4\nrescale = \"accum\"\n"
            "[[checks]]\nname = \"finite_loss\"\n"));
}

config::Setting override_of(const std::string& key, config::Value value) {
  config::Origin origin{config::SourceKind::kFile, "configs/my.toml", 40, 1};
  return config::Setting{"gates.t." + key, value, origin, {{value, origin}}};
}

TEST(GateOverrides, ReplaceLaunchAndParams) {
  auto s = parse(kMinimal);
  ASSERT_TRUE(s);
  auto o = apply_overrides(*s, {{"nproc", override_of("nproc", std::int64_t{8})},
                                {"loss_rel_tol", override_of("loss_rel_tol", 1e-3)}});
  ASSERT_TRUE(o) << o.error().front().format();
  EXPECT_EQ(o->launch.nproc, 8);
  EXPECT_DOUBLE_EQ(o->params["loss_rel_tol"].get<double>(), 1e-3);
  EXPECT_EQ(o->key_origins.at("nproc"), "configs/my.toml:40:1 ([gates.t])");
}

TEST(GateOverrides, UnknownKeyNamesTheGateFileAndSuggests) {
  auto s = parse(kMinimal);
  auto o = apply_overrides(*s, {{"loss_rel_tl", override_of("loss_rel_tl", 1e-3)}});
  ASSERT_FALSE(o);
  const Error& e = o.error().front();
  EXPECT_EQ(e.file, "configs/my.toml");
  EXPECT_EQ(e.line, 40);
  EXPECT_EQ(e.key, "gates.t.loss_rel_tl");
  EXPECT_NE(e.message.find("stages/09-test.toml"), std::string::npos);
  EXPECT_NE(e.hint.find("loss_rel_tol"), std::string::npos);
}

TEST(GateOverrides, WrongTypeIsAnError) {
  auto s = parse(kMinimal);
  EXPECT_FALSE(
      apply_overrides(*s, {{"loss_rel_tol", override_of("loss_rel_tol", std::string("tight"))}}));
  auto bad = apply_overrides(*s, {{"nproc", override_of("nproc", std::string("lots"))}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().front().key, "gates.t.nproc");
  EXPECT_FALSE(
      apply_overrides(*s, {{"loss_policy", override_of("loss_policy", std::string("close"))}}));
}

}  // namespace
// Every route back the stage files hold (gate, check, `<metric>_route_back_*`) is the gate
// itself or an earlier one: a failure is never sent on to a gate that has not run.
TEST(RouteBack, EveryRouteBackOfTheStageFilesIsTheGateOrAnEarlierOne) {
  const auto& specs = real_specs();
  EXPECT_TRUE(check_route_backs(specs).empty());
  std::size_t routes = 0;
  for (const GateSpec& spec : specs) {
    std::vector<std::string> all{spec.route_back};
    for (const CheckSpec& c : spec.checks) all.push_back(c.route_back);
    for (const auto& [key, value] : spec.params.items()) {
      if (key.find("_route_back_") != std::string::npos) all.push_back(value.get<std::string>());
    }
    for (const std::string& route : all) {
      if (route.empty()) continue;
      ++routes;
      const GateSpec* target = find_gate(specs, route);
      ASSERT_NE(target, nullptr) << spec.id << " -> " << route;
      EXPECT_LE(target->order, spec.order) << spec.id << " routes back to " << route;
    }
  }
  EXPECT_GE(routes, specs.size());
}

TEST(RouteBack, ALaterGateIsRefusedNamingTheFileAndKey) {
  std::vector<GateSpec> specs = real_specs();
  specs[2].params["loss_route_back_first_step"] = "shapes";  // pp2 -> a gate after it
  const Errors errors = check_route_backs(specs);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors.front().key, "params.loss_route_back_first_step");
  EXPECT_NE(errors.front().file.find("03-pp2.toml"), std::string::npos);
  EXPECT_NE(errors.front().message.find("names a later gate"), std::string::npos);
  specs[2].params["loss_route_back_first_step"] = "nowhere";
  ASSERT_EQ(check_route_backs(specs).size(), 1u);
  EXPECT_NE(check_route_backs(specs).front().message.find("names no gate"), std::string::npos);
}

}  // namespace bigmac::gates
