#include "diagnose/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "config/data_file.h"
#include "diagnose/metric_rules.h"
#include "diagnose/text_matcher.h"
#include "gates/gate_spec.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;

Expected<Catalog> parse(std::string_view toml) {
  auto file = config::parse_data_file(toml, "cat.toml");
  if (!file) return tl::unexpected(file.error());
  return parse_catalog(*file);
}

constexpr const char* kGood = R"(
[[signature]]
id = "port"
class = "port_in_use"
gate = "dp"
specificity = 90
confidence = 0.9
symptom = "port {port} busy"
cause = "held"
fix = "change {port}"
patterns = ['bind to \S+:(?P<port>\d+) \(errno: 98', 'port: (?P<port>\d+), useIpv6']
)";

TEST(Catalog, ParsesAGoodEntry) {
  auto catalog = parse(kGood);
  ASSERT_TRUE(catalog) << catalog.error().format();
  ASSERT_EQ(catalog->signatures.size(), 1u);
  const Signature& s = catalog->signatures[0];
  EXPECT_EQ(s.text.id, "port");
  EXPECT_EQ(s.text.klass, "port_in_use");
  EXPECT_EQ(s.text.line, 3);
  EXPECT_EQ(s.patterns.size(), 2u);
}

TEST(Catalog, MalformedPatternNamesTheEntryAndItsLine) {
  std::string toml = kGood;
  toml.replace(toml.find("'port: (?P<port>"), 1, "'(port: ");
  auto catalog = parse(toml);
  ASSERT_FALSE(catalog);
  EXPECT_THAT(catalog.error().message, HasSubstr("entry `port`"));
  EXPECT_THAT(catalog.error().message, HasSubstr("does not compile"));
  EXPECT_EQ(catalog.error().file, "cat.toml");
  EXPECT_EQ(catalog.error().line, 11);
  EXPECT_EQ(catalog.error().key, "signature[0].patterns[1]");
}

TEST(Catalog, PlaceholderMustBeCapturedByEveryPattern) {
  std::string toml = kGood;
  toml.replace(toml.find("(?P<port>\\d+), useIpv6"), 13, "\\d+");
  auto catalog = parse(toml);
  ASSERT_FALSE(catalog);
  EXPECT_THAT(catalog.error().message, HasSubstr("`{port}`"));
  EXPECT_THAT(catalog.error().message, HasSubstr("not every pattern"));
}

TEST(Catalog, UnknownKeySuggestsTheClosest) {
  std::string toml = std::string(kGood) + "patern = 'x'\n";
  auto catalog = parse(toml);
  ASSERT_FALSE(catalog);
  EXPECT_THAT(catalog.error().message, HasSubstr("unknown key `patern`"));
  EXPECT_THAT(catalog.error().hint, HasSubstr("patterns"));
}

// Which gates exist is the gate files' to say: the catalog is checked against their ids.
TEST(Catalog, AnEntryRoutingBackToAGateOfNoGateFileIsAnError) {
  std::string bad_gate = kGood;
  bad_gate.replace(bad_gate.find("gate = \"dp\""), 11, "gate = \"pp\"");
  auto a = parse(bad_gate);
  ASSERT_TRUE(a) << a.error().format();
  const std::vector<std::string> ids = {"single", "dp", "pp2", "shapes", "target"};
  const Errors errors = unknown_gates(*a, ids);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("entry `port`: unknown gate `pp` (did you mean `dp`?)"));
  EXPECT_EQ(errors[0].file, "cat.toml");
  EXPECT_EQ(errors[0].line, 3);  // the line of its id
  EXPECT_TRUE(unknown_gates(*a, {"single", "pp"}).empty());
}

TEST(Catalog, AClassesWhenIsReadAndCheckedLikeASignatures) {
  const std::string good = std::string(kGood) + R"(
[[class]]
id = "port_in_use"
gate = "dp"
cause = "taken"
fix = "free it"

[[class.when]]
context = "slurm"
cause = "another job on the node holds it"
)";
  auto catalog = parse(good);
  ASSERT_TRUE(catalog) << catalog.error().format();
  const ClassSpec* spec = catalog->class_spec("port_in_use");
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->when.size(), 1u);
  EXPECT_EQ(spec->when[0].context, "slurm");
  EXPECT_EQ(spec->when[0].cause, "another job on the node holds it");

  std::string unknown = good;
  unknown.replace(unknown.find("context = \"slurm\""), 17, "context = \"slrum\"");
  auto bad = parse(unknown);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("unknown context `slrum`"));
  EXPECT_THAT(bad.error().hint, HasSubstr("slurm"));

  // Other words in a context need the class's own words to replace.
  const std::string wordless = std::string(kGood) + R"(
[[class]]
id = "port_in_use"

[[class.when]]
context = "slurm"
cause = "x"
)";
  auto none = parse(wordless);
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("`when` without the class's own words"));
}

TEST(Catalog, DuplicateIdIsAnError) {
  auto b = parse(std::string(kGood) + kGood);
  ASSERT_FALSE(b);
  EXPECT_THAT(b.error().message, HasSubstr("defined twice"));
}

TEST(Catalog, RuleMustBeKnownAndUseOnlyItsValues) {
  const char* unknown = R"(
[[rule]]
id = "loss_nonfinite"
class = "x"
gate = "single"
symptom = "s"
cause = "c"
fix = "f"
)";
  auto a = parse(unknown);
  ASSERT_FALSE(a);
  EXPECT_THAT(a.error().hint, HasSubstr("loss_non_finite"));

  const char* wrong_value = R"(
[[rule]]
id = "loss_non_finite"
class = "x"
gate = "single"
symptom = "loss {loss} at {step}"
cause = "c"
fix = "f"
)";
  auto b = parse(wrong_value);
  ASSERT_FALSE(b);
  EXPECT_THAT(b.error().message, HasSubstr("`{loss}`"));
  EXPECT_THAT(b.error().hint, HasSubstr("step, value"));
}

TEST(Catalog, WrongTypesAreErrorsNamingTheKey) {
  std::string not_a_list = kGood;
  not_a_list.erase(not_a_list.find("patterns = ["));
  not_a_list += "patterns = 'bind to'\n";
  auto a = parse(not_a_list);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().key, "signature[0].patterns");

  std::string bad_follow = std::string(kGood) + "[signature.follow]\npatterns = ['x']\n";
  auto b = parse(bad_follow);
  ASSERT_FALSE(b);
  EXPECT_THAT(b.error().message, HasSubstr("follow.within"));

  std::string bad_specificity = kGood;
  bad_specificity.replace(bad_specificity.find("specificity = 90"), 16, "specificity = 900");
  auto c = parse(bad_specificity);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().key, "signature[0].specificity");

  auto d = parse("[[signatures]]\nid = \"x\"\n");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("unknown table `signatures`"));
}

TEST(Catalog, BuiltinCatalogIsValidAndCoversEveryRule) {
  auto catalog = builtin_catalog();
  ASSERT_TRUE(catalog) << catalog.error().format();
  EXPECT_GE(catalog->signatures.size(), 30u);
  for (const MetricRuleSpec& spec : metric_rule_specs()) {
    EXPECT_NE(catalog->rule(spec.id), nullptr) << spec.id;
  }
  auto matcher = TextMatcher::build(*catalog);
  EXPECT_TRUE(matcher);
  auto specs = gates::load_gate_specs(std::string(BIGMAC_SOURCE_DIR) + "/stages");
  ASSERT_TRUE(specs);
  std::vector<std::string> ids;
  for (const gates::GateSpec& spec : *specs) ids.push_back(spec.id);
  for (const Error& e : unknown_gates(*catalog, ids)) ADD_FAILURE() << e.format();
}

TEST(Catalog, CheckedInFileMatchesTheBuiltinOne) {
  auto file = load_catalog(BIGMAC_SOURCE_DIR "/stages/diagnoses.toml");
  ASSERT_TRUE(file) << file.error().format();
  auto builtin = builtin_catalog();
  ASSERT_TRUE(builtin);
  EXPECT_EQ(file->signatures.size(), builtin->signatures.size());
  EXPECT_EQ(file->rules.size(), builtin->rules.size());
}

TEST(Catalog, EveryIssueClassHasAtLeastOneSignature) {
  auto catalog = builtin_catalog();
  ASSERT_TRUE(catalog);
  std::set<std::string> classes;
  for (const Signature& s : catalog->signatures) classes.insert(s.text.klass);
  for (const char* klass :
       {"rendezvous_timeout", "port_in_use", "connection_refused", "nccl_no_device",
        "nccl_duplicate_gpu", "nccl_cuda_error", "nccl_system_error", "collective_timeout",
        "state_dict_mismatch", "device_mismatch", "shape_mismatch", "out_of_memory", "child_failed",
        "non_finite", "gradient_overflow", "loss_scale_underflow"}) {
    EXPECT_EQ(classes.count(klass), 1u) << klass;
  }
}

}  // namespace
}  // namespace bigmac::diagnose
