// What adopt makes of the probe's `framework` events (adopt/framework_model.h), from events as
// the probe writes them for Lightning 2.6.6, transformers 5.17.0 and accelerate 1.15.0
// (tests/probe/probe_frameworks_test.py checks the probe's side against the real frameworks).
#include "adopt/framework_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "adopt/config_draft.h"

namespace bigmac::adopt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json lightning(json given, int devices = 1) {
  return {{"ev", "framework"},
          {"framework", "lightning"},
          {"object", "Trainer"},
          {"version", "2.6.6"},
          {"devices", devices},
          {"num_nodes", 1},
          {"planned_world_size", devices},
          {"strategy", "SingleDeviceStrategy"},
          {"accumulate_grad_batches", 2},
          {"max_steps", -1},
          {"given", std::move(given)},
          {"env_defaults", json::array()},
          {"launcher_world_size", nullptr}};
}

// Trial logs that read no step line of the trainer's.
TrialLogs no_lines() {
  TrialLogs logs;
  return logs;
}

json transformers() {
  return {{"ev", "framework"},
          {"framework", "transformers"},
          {"object", "Trainer"},
          {"version", "5.17.0"},
          {"per_device_train_batch_size", 4},
          {"gradient_accumulation_steps", 2},
          {"world_size", 1},
          {"samples_per_step", 8},
          {"logging_steps", 1.0},  // a float in TrainingArguments
          {"num_processes", 1}};
}

json accelerate(int processes, int launched) {
  return {{"ev", "framework"},
          {"framework", "accelerate"},
          {"object", "Accelerator"},
          {"version", "1.15.0"},
          {"distributed_type", "DistributedType.NO"},
          {"num_processes", processes},
          {"gradient_accumulation_steps", 2},
          {"launcher_world_size", launched}};
}

TEST(FrameworkModel, ALightningTrainerLeftAtItsDefaultsGetsTheGatesLayoutFromItsVariables) {
  const FrameworkModel m =
      model_frameworks({lightning({"gradient_clip_val", "max_epochs"})}, {}, no_lines());
  EXPECT_THAT(m.names, ElementsAre("lightning"));
  ASSERT_EQ(m.env.size(), 3u);
  EXPECT_EQ(m.env.at("PL_TRAINER_DEVICES").value, "{nproc_per_node}");
  EXPECT_EQ(m.env.at("PL_TRAINER_NUM_NODES").value, "{nnodes}");
  EXPECT_EQ(m.env.at("PL_TRAINER_ACCUMULATE_GRAD_BATCHES").value, "{grad_accum}");
  // The second trial runs as a two-process gate would: two devices, the first trial's accumulation.
  EXPECT_EQ(m.second_trial_env.at("PL_TRAINER_DEVICES"), "2");
  EXPECT_EQ(m.second_trial_env.at("PL_TRAINER_ACCUMULATE_GRAD_BATCHES"), "2");
  EXPECT_TRUE(m.distributes);
  EXPECT_THAT(m.distributes_evidence, HasSubstr("devices 1 × num_nodes 1 (SingleDeviceStrategy)"));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_THAT(m.notes[0], HasSubstr("Lightning 2.6.6 Trainer"));
}

TEST(FrameworkModel, WhatTheProgramPassesOrItsFlagsHandOverIsNotSetByVariable) {
  // devices passed in the program: a variable would not change it, and N processes would run
  // N separate trainings; said so.
  const FrameworkModel in_code =
      model_frameworks({lightning({"devices", "accumulate_grad_batches"}, 1)}, {}, no_lines());
  EXPECT_EQ(in_code.env.count("PL_TRAINER_DEVICES"), 0u);
  EXPECT_EQ(in_code.env.count("PL_TRAINER_ACCUMULATE_GRAD_BATCHES"), 0u);
  EXPECT_FALSE(in_code.distributes);
  EXPECT_THAT(in_code.notes.back(), HasSubstr("N separate trainings"));
  // LightningCLI's flags: the command hands them over.
  const auto args =
      recognise_arguments({"python", "main.py", "fit", "--trainer.devices=1", "--trainer.num_nodes",
                           "1", "--trainer.accumulate_grad_batches", "2"});
  const FrameworkModel by_flags = model_frameworks(
      {lightning({"devices", "num_nodes", "accumulate_grad_batches"})}, args, no_lines());
  EXPECT_TRUE(by_flags.env.empty());
  EXPECT_EQ(by_flags.notes.size(), 1u);
}

TEST(FrameworkModel, TheTrainersRoundedLogDictsAreNotReadAsSteps) {
  TrialLogs logs;
  logs.format = logs::LogFormat::kPythonDict;
  logs.example =
      "{'loss': '4.717', 'grad_norm': '0.6922', 'learning_rate': '0.001', "
      "'epoch': '0.01562'}";
  const FrameworkModel m = model_frameworks({transformers(), accelerate(1, 0)}, {}, logs);
  EXPECT_THAT(m.names, ElementsAre("transformers", "accelerate"));
  EXPECT_THAT(m.lines_not_read, HasSubstr("logging_steps = 1"));
  EXPECT_THAT(m.lines_not_read, HasSubstr("rounded to 4 significant digits"));
  // The arithmetic, and nothing of the Trainer's own Accelerator.
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_THAT(m.notes[0], HasSubstr("per_device_train_batch_size 4 × gradient_accumulation_steps "
                                    "2 × world size 1 = 8 samples a step"));
  EXPECT_TRUE(m.env.empty());
  // A stdout the Trainer does not log to is read as it is.
  EXPECT_TRUE(model_frameworks({transformers()}, {}, no_lines()).lines_not_read.empty());
}

TEST(FrameworkModel, ASecondTrialWhereEachRankRanAloneIsSaid) {
  FrameworkModel m = model_frameworks({accelerate(1, 0)}, {}, no_lines());
  ASSERT_EQ(m.notes.size(), 1u);
  check_second_trial({{accelerate(1, 2)}, {accelerate(1, 2)}}, m);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_THAT(m.notes[1], HasSubstr("joined 1 process (DistributedType.NO) of the launcher's 2"));
  EXPECT_THAT(m.notes[1], HasSubstr("cpu=True"));
  // Both joined: nothing to say.
  FrameworkModel joined = model_frameworks({accelerate(1, 0)}, {}, no_lines());
  check_second_trial({{accelerate(2, 2)}, {accelerate(2, 2)}}, joined);
  EXPECT_EQ(joined.notes.size(), 1u);
}

TEST(FrameworkModel, APreparedSchedulerThatStepsPerProcessIsExplained) {
  json scheduler = {
      {"ev", "framework"},      {"framework", "accelerate"}, {"object", "AcceleratedScheduler"},
      {"version", "1.15.0"},    {"scheduler", "LambdaLR"},   {"step_with_optimizer", true},
      {"split_batches", false}, {"num_processes", 1}};
  const FrameworkModel m = model_frameworks({accelerate(1, 0), scheduler}, {}, no_lines());
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_THAT(m.notes[1], HasSubstr("steps the LambdaLR given to prepare() num_processes times"));
  EXPECT_THAT(m.notes[1], HasSubstr("runs dp times faster"));
  // Split batches (or a scheduler not stepped with the optimizer): one step a step, no note.
  scheduler["split_batches"] = true;
  EXPECT_EQ(model_frameworks({accelerate(1, 0), scheduler}, {}, no_lines()).notes.size(), 1u);
}

TEST(FrameworkModel, EventsAreReadFromTheProbeLogLineByLine) {
  const fs::path file =
      fs::temp_directory_path() / ("framework-events-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(file) << "{\"ev\":\"run\",\"rank\":0}\n"
                      << transformers().dump() << "\n"
                      << "{\"ev\":\"framework\", broken\n"
                      << "{\"ev\":\"step\",\"global_step\":0,\"note\":\"framework\"}\n"
                      << lightning(json::array()).dump() << "\n";
  const auto events = read_framework_events(file);
  fs::remove(file);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].at("framework"), "transformers");
  EXPECT_EQ(events[1].at("framework"), "lightning");
  EXPECT_TRUE(read_framework_events(file).empty());  // gone: none
}

TEST(FrameworkModel, TheDraftSetsTheVariablesAndSaysWhatTheyHandOver) {
  DraftInputs in;
  in.original = {"/venv/bin/python", "transformer.py"};
  in.command = in.original;
  in.log_format = "bigmac";
  const FrameworkModel m = model_frameworks({lightning({})}, {}, no_lines());
  in.frameworks = &m;
  const std::string text = draft_text(draft_config(in));
  EXPECT_THAT(text, HasSubstr("env.PL_TRAINER_DEVICES = '{nproc_per_node}'"));
  EXPECT_THAT(text, HasSubstr("env.PL_TRAINER_ACCUMULATE_GRAD_BATCHES = '{grad_accum}'"));
  EXPECT_THAT(text, HasSubstr("PL_TRAINER_ACCUMULATE_GRAD_BATCHES -> {grad_accum}"));
  const fs::path file =
      fs::temp_directory_path() / ("framework-draft-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(file) << text;
  config::ConfigSources sources;
  sources.file = file.string();
  auto loaded = config::load_config(sources);
  fs::remove(file);
  ASSERT_TRUE(loaded) << loaded.error().front().format();
  EXPECT_EQ(std::get<std::string>(loaded->trainer_env.at("PL_TRAINER_NUM_NODES").value),
            "{nnodes}");
}

}  // namespace
}  // namespace bigmac::adopt
