#include "config_fixture.h"

namespace bigmac::config {
namespace {

using ::testing::HasSubstr;

TEST_F(ConfigTest, DefaultsWithoutAFile) {
  auto config = load_config(ConfigSources{});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->train.micro_batch_size, 2);
  EXPECT_EQ(config->train.gradient_accumulation_steps, 4);
  EXPECT_EQ(config->train.seed, 1234);
  EXPECT_EQ(config->train.max_steps, 20);
  EXPECT_EQ(config->launch.backend, "auto");
}

TEST_F(ConfigTest, DemoFileEqualsTheBuiltInDefaults) {
  ConfigSources demo;
  demo.file = std::string(BIGMAC_SOURCE_DIR) + "/configs/demo.toml";
  auto from_file = load_config(demo);
  auto builtin = load_config(ConfigSources{});
  ASSERT_TRUE(from_file) << join(from_file.error());
  ASSERT_TRUE(builtin);
  ASSERT_EQ(from_file->settings.entries.size(), builtin->settings.entries.size());
  EXPECT_EQ(from_file->parallel.pp_size, 2);
  EXPECT_EQ(from_file->derived.dp, 2);
  for (std::size_t i = 0; i < builtin->settings.entries.size(); ++i) {
    const std::string& key = builtin->settings.entries[i].key;
    // The demo's one documented difference: its target layout is PP 2 × DP 2.
    if (key == "parallel.pp_size" || key == "derived.dp" || key == "derived.global_batch" ||
        key == "derived.split_points") {
      continue;
    }
    EXPECT_EQ(value_to_string(from_file->settings.entries[i].value),
              value_to_string(builtin->settings.entries[i].value))
        << builtin->settings.entries[i].key;
  }
}

TEST_F(ConfigTest, ReadsEveryLayer) {
  Config c = load_ok(R"(
[launch]
nproc_per_node = 2
master_port = 31000
[parallel]
pp_size = 2
schedule = "gpipe"
[train]
micro_batch_size = 4
lr = 1
[model]
num_layers = 6
split_points = [2]
[trainer]
kind = "command"
command = ["python3", "train.py", "--pp", "{pp}"]
)");
  EXPECT_EQ(c.launch.nproc_per_node, 2);
  EXPECT_EQ(c.launch.master_port, 31000);
  EXPECT_EQ(c.parallel.schedule, "gpipe");
  EXPECT_EQ(c.train.micro_batch_size, 4);
  EXPECT_DOUBLE_EQ(c.train.lr, 1.0);  // an integer is accepted where a number is expected
  EXPECT_EQ(c.model.split_points, std::vector<int>{2});
  EXPECT_FALSE(c.model.split_points_auto);
  EXPECT_EQ(c.trainer.command.size(), 4u);
}

TEST_F(ConfigTest, KeyInTheWrongLayerNamesTheRightTable) {
  Errors errors = load_errors("[launch]\nmicro_batch_size = 2\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("belongs in [train]"));
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].key, "launch.micro_batch_size");
}

TEST_F(ConfigTest, TopLevelKeyNamesItsTable) {
  Errors errors = load_errors("pp_size = 2\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("[parallel]"));
}

TEST_F(ConfigTest, UnknownKeySuggestsTheClosest) {
  Errors errors = load_errors("[parallel]\nshedule = \"1f1b\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].format(), HasSubstr("did you mean 'schedule'?"));
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].column, 1);
}

TEST_F(ConfigTest, UnknownTableSuggestsTheClosest) {
  Errors errors = load_errors("[trian]\nseed = 1\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].format(), HasSubstr("did you mean 'train'?"));
}

TEST_F(ConfigTest, DpAnywhereExplainsItIsDerived) {
  for (const char* toml : {"dp = 2\n", "[parallel]\ndp = 2\n", "[launch]\ndp = 2\n"}) {
    Errors errors = load_errors(toml);
    ASSERT_EQ(errors.size(), 1u) << toml;
    EXPECT_THAT(errors[0].message, HasSubstr("dp is derived"));
    EXPECT_THAT(errors[0].message, HasSubstr("world_size / (pp_size × tp_size)"));
  }
  Errors from_set = load_errors("", {"parallel.dp=2"});
  ASSERT_EQ(from_set.size(), 1u);
  EXPECT_THAT(from_set[0].message, HasSubstr("dp is derived"));
}

TEST_F(ConfigTest, WrongTypeSaysFoundAndExpected) {
  Errors errors = load_errors("[train]\nseed = \"abc\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "expected an integer, found string \"abc\"");
  EXPECT_EQ(errors[0].kind, ErrorKind::kConfig);
}

TEST_F(ConfigTest, ZeroAndNegativeCountsAreRejected) {
  Errors errors = load_errors("[train]\nmax_steps = 0\nmicro_batch_size = -2\n");
  ASSERT_EQ(errors.size(), 2u) << join(errors);
  EXPECT_THAT(join(errors), HasSubstr("max_steps: must be at least 1, found 0"));
  EXPECT_THAT(join(errors), HasSubstr("micro_batch_size: must be at least 1, found -2"));
}

TEST_F(ConfigTest, EnumerationsListTheChoices) {
  Errors errors = load_errors("[launch]\nlauncher = \"mpirun\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("\"builtin\", \"torchrun\", \"accelerate\", \"slurm\""));
}

TEST_F(ConfigTest, MalformedTomlGivesLineAndColumn) {
  Errors errors = load_errors("[train\nseed = 1\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_GT(errors[0].column, 0);
  EXPECT_THAT(errors[0].file, HasSubstr("test.toml"));
}

TEST_F(ConfigTest, MissingFileIsAnError) {
  ConfigSources sources;
  sources.file = (dir_ / "absent.toml").string();
  auto config = load_config(sources);
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error()[0].format(), HasSubstr("absent.toml"));
  EXPECT_EQ(exit_code_for(config.error()), ExitCode::kBadInput);
}

TEST_F(ConfigTest, SetWithoutEqualsIsAUsageError) {
  Errors errors = load_errors("", {"train.seed"});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUsage);
  EXPECT_THAT(errors[0].message, HasSubstr("table.key=value"));
}

TEST_F(ConfigTest, SetUnknownKeySuggests) {
  Errors errors = load_errors("", {"train.sead=3"});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].format(), HasSubstr("did you mean 'train.seed'?"));
}

TEST_F(ConfigTest, GateOverridesAndLogFieldsAreKept) {
  Config c = load_ok(R"(
[gates.dp]
nproc = 2
loss_rel_tol = 1e-3
[logs.fields]
loss = 'loss=([0-9.]+)'
)",
                     {"gates.target.nproc=8"});
  EXPECT_EQ(std::get<std::int64_t>(c.gate_overrides.at("dp").at("nproc").value), 2);
  EXPECT_DOUBLE_EQ(std::get<double>(c.gate_overrides.at("dp").at("loss_rel_tol").value), 1e-3);
  EXPECT_EQ(std::get<std::int64_t>(c.gate_overrides.at("target").at("nproc").value), 8);
  EXPECT_EQ(c.log_fields.at("loss"), "loss=([0-9.]+)");
}

// Which gates exist is the gate files' to say (gates::GateCatalog refuses an unknown one), so a
// gate added as stages/06-*.toml can be overridden like the five shipped ones.
TEST_F(ConfigTest, GateOverridesAreKeptForTheGateCatalogToCheck) {
  Config c = load_ok("[gates.mygate]\nnproc = 2\n", {"gates.other.x=1"});
  EXPECT_EQ(std::get<std::int64_t>(c.gate_overrides.at("mygate").at("nproc").value), 2);
  EXPECT_EQ(std::get<std::int64_t>(c.gate_overrides.at("other").at("x").value), 1);
}

TEST_F(ConfigTest, TextValuesAreTypedBySchema) {
  Config c = load_ok(
      "", {"model.split_points=[1, 3]", "parallel.pp_size=3", "launch.nproc_per_node=3",
           "trace.shapes=true", "launch.master_addr=node-0", "trainer.command=[\"a\", \"b\"]"});
  EXPECT_EQ(c.model.split_points, (std::vector<int>{1, 3}));
  EXPECT_TRUE(c.trace.shapes);
  EXPECT_EQ(c.launch.master_addr, "node-0");
  EXPECT_EQ(c.trainer.command, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ConfigTest, SlurmTableReadsFromFileEnvironmentAndSet) {
  Config c = load_ok(
      "[launch]\nlauncher = \"slurm\"\n[launch.slurm]\npartition = \"gpu\"\n"
      "extra_args = [\"--exclude=n3\"]\n",
      {"launch.slurm.time=00:30:00"}, {{"BIGMAC_LAUNCH_SLURM_GPUS_PER_NODE", "4"}});
  EXPECT_EQ(c.launch.launcher, "slurm");
  EXPECT_EQ(c.launch.slurm.partition, "gpu");
  EXPECT_EQ(c.launch.slurm.time, "00:30:00");
  EXPECT_EQ(c.launch.slurm.gpus_per_node, 4);
  EXPECT_EQ(c.launch.slurm.extra_args, (std::vector<std::string>{"--exclude=n3"}));
  const Setting* partition = c.settings.find("launch.slurm.partition");
  ASSERT_NE(partition, nullptr);
  EXPECT_EQ(partition->origin.line, 4);
}

TEST_F(ConfigTest, AccelerateTableReadsFromFileEnvironmentAndSet) {
  Config c = load_ok(
      "[launch]\nlauncher = \"accelerate\"\n[launch.accelerate]\n"
      "extra_args = [\"--mixed_precision\", \"bf16\"]\n",
      {"launch.accelerate.config_file=/home/u/acc.yaml"});
  EXPECT_EQ(c.launch.launcher, "accelerate");
  EXPECT_EQ(c.launch.accelerate.config_file, "/home/u/acc.yaml");
  EXPECT_EQ(c.launch.accelerate.extra_args,
            (std::vector<std::string>{"--mixed_precision", "bf16"}));
  EXPECT_THAT(join(load_errors("[launch.accelerate]\nconfig_fle = \"a.yaml\"\n")),
              HasSubstr("did you mean 'config_file'?"));
}

TEST_F(ConfigTest, SlurmTableKeysAreChecked) {
  Errors errors = load_errors("[launch.slurm]\npartiton = \"gpu\"\ngpus_per_node = -1\n");
  EXPECT_THAT(join(errors), HasSubstr("did you mean 'partition'?"));
  EXPECT_THAT(join(errors), HasSubstr("launch.slurm.gpus_per_node"));
  EXPECT_THAT(join(load_errors("", {"launch.launcher=slurm+torchrum"})),
              HasSubstr("slurm+torchrun"));
}

}  // namespace
}  // namespace bigmac::config
