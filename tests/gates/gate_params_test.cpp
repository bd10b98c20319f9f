// gates/gate_params: a gate parameter a check cannot use is an error, never silently its
// default (issue 20, D14).

#include "gates/gate_params.h"

#include <gtest/gtest.h>

#include "gates/gate_spec.h"

namespace bigmac::gates {
namespace {

std::vector<ParamProblem> problems(const std::string& json) {
  return check_gate_params(nlohmann::json::parse(json));
}

TEST(GateParams, TheParametersOfTheShippedGatesAreValid) {
  for (const char* file : {"01-single", "02-dp", "03-pp2", "04-shapes", "05-target"}) {
    auto spec = load_gate_spec(std::string(BIGMAC_SOURCE_DIR) + "/stages/" + file + ".toml");
    ASSERT_TRUE(spec) << spec.error().format();
    EXPECT_TRUE(check_gate_params(spec->params).empty()) << file;
  }
}

TEST(GateParams, WrongTypesRangesAndNamesAreNamed) {
  struct Case {
    const char* params;
    const char* key;
    const char* message;
  };
  const Case cases[] = {
      {R"({"loss_rel_tol": "tight"})", "loss_rel_tol", "expected a number, found a string"},
      {R"({"loss_rel_tol": -1})", "loss_rel_tol", "must be at least 0, found -1"},
      {R"({"grad_norm_abs_tol": -0.5})", "grad_norm_abs_tol", "must be at least 0"},
      {R"({"loss_factor": 0.5})", "loss_factor", "must be at least 1"},
      {R"({"grad_norm_growth_factor": "1.5"})", "grad_norm_growth_factor", "expected a number"},
      {R"({"grad_norm_growth_steps": 0})", "grad_norm_growth_steps", "from 1 to"},
      {R"({"grad_norm_growth_steps": 2.5})", "grad_norm_growth_steps", "expected a whole number"},
      {R"({"idle_limit_s": 0})", "idle_limit_s", "must be more than 0, found 0"},
      {R"({"loss_policy": "fuzzy"})", "loss_policy", "unknown comparison policy \"fuzzy\""},
      {R"({"loss_band_window": 4})", "loss_band_window", "expected an odd whole number"},
      {R"({"grad_norm_band_window": 1})", "grad_norm_band_window", "from 3 to 1001"},
      {R"({"loss_band_sigmas": 0})", "loss_band_sigmas", "must be more than 0"},
      {R"({"loss_band_confirm": 0})", "loss_band_confirm", "from 1 to"},
      {R"({"loss_route_back_later": 5})", "loss_route_back_later", "expected a gate id"},
      {R"({"required_events": "run"})", "required_events", "expected an array of names"},
      {R"({"required_events": ["run", "rnu"]})", "required_events", "unknown name \"rnu\""},
      {R"({"required_step_fields": ["loss", 3]})", "required_step_fields", "unknown name 3"},
      {R"({"los_rel_tol": 0.001})", "los_rel_tol", "unknown parameter 'los_rel_tol'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    const auto found = problems(c.params);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].key, c.key);
    EXPECT_NE(found[0].message.find(c.message), std::string::npos) << found[0].message;
  }
  EXPECT_TRUE(problems(R"({"loss_policy": "band", "loss_band_window": 7, "loss_band_sigmas": 4.5,
                            "loss_band_confirm": 2, "grad_norm_policy": "band"})")
                  .empty());
  EXPECT_NE(problems(R"({"lr_policy": "bands"})")[0].hint.find("\"band\""), std::string::npos);
  EXPECT_EQ(problems(R"({"los_rel_tol": 0.001})")[0].hint, "did you mean 'loss_rel_tol'?");
  EXPECT_EQ(problems(R"({"required_events": ["rnu"]})")[0].hint, "did you mean 'run'?");
}

TEST(GateParams, AGateFileWithABadParameterDoesNotLoad) {
  auto file = config::parse_data_file(
      "id = \"t\"\norder = 9\n[params]\nloss_rel_tol = \"tight\"\n[[checks]]\nname = "
      "\"finite_loss\"\n",
      "stages/09-t.toml");
  ASSERT_TRUE(file);
  auto spec = parse_gate_spec(*file);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().format(),
            "stages/09-t.toml:4:16: params.loss_rel_tol: expected a number, found a string");
}

}  // namespace
}  // namespace bigmac::gates
