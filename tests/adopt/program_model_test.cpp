// What adopt learns of a pipeline from the probe's stages (docs/pipelines.md): that it has
// stages, whether every process is one, their schedule, micro-batches and layers, and whether
// its batch flag is the whole step's batch.
#include "adopt/program_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "logs/rank_log.h"

namespace bigmac::adopt {
namespace {

TrialLogs probe_log(const std::string& text, int rank = 0) {
  TrialLogs logs;
  logs.probe = logs::load_text(text, "probe", logs::LogFormat::kBigmac, rank).ranks.at(0);
  return logs;
}

// A stage's events as the probe writes them: its layout and, for each step, its passes.
std::string stage_events(int rank, int stage, int stages, int first, int last, int loss_count,
                         const std::string& schedule = "gpipe") {
  std::string out = fmt::format(
      R"({{"ev":"layout","rank":{},"stage":{},"num_stages":{},"first_layer":{},"last_layer":{},"param_count":8,"schedule":"{}"}})"
      "\n",
      rank, stage, stages, first, last, schedule);
  out += fmt::format(R"({{"ev":"batch","rank":{},"input_shape":[2,6],"input_dtype":"int64"}})"
                     "\n",
                     rank);
  for (int step = 0; step < 2; ++step) {
    for (int mb = 0; mb < 4; ++mb) {
      out += fmt::format(
          R"({{"ev":"mb","rank":{},"global_step":{},"stage":{},"mb":{},"phase":"F","start":1,"end":2}})"
          "\n",
          rank, step, stage, mb);
    }
    out += fmt::format(R"({{"ev":"step","rank":{},"global_step":{},"loss_count":{},"lr":0.5}})"
                       "\n",
                       rank, step, loss_count);
  }
  return out;
}

TEST(ProgramModelStages, EveryProcessAStageWithItsScheduleMicroBatchesAndLayers) {
  const TrialLogs one = probe_log(stage_events(0, 0, 1, 0, 3, 4));
  const std::vector<TrialLogs> two{probe_log(stage_events(0, 0, 2, 0, 1, 0), 0),
                                   probe_log(stage_events(1, 1, 2, 2, 3, 4), 1)};
  TrialRun run;
  run.exited = true;
  ProgramModel model;
  measure_two_processes(one, two, run, false, false, model);
  EXPECT_TRUE(model.stages);
  EXPECT_TRUE(model.stage_per_process) << model.stages_evidence;
  EXPECT_NE(model.stages_evidence.find("every process is a stage"), std::string::npos);
  EXPECT_EQ(model.schedule, "gpipe");
  EXPECT_EQ(model.micro_batches, 4);
  EXPECT_EQ(model.num_layers, 4);

  // Two stages on each process (an interleaved schedule): not one stage a process.
  const std::vector<TrialLogs> interleaved{probe_log(stage_events(0, 0, 4, 0, 0, 0), 0),
                                           probe_log(stage_events(1, 3, 4, 3, 3, 4), 1)};
  ProgramModel multi;
  measure_two_processes(one, interleaved, run, false, false, multi);
  EXPECT_TRUE(multi.stages);
  EXPECT_FALSE(multi.stage_per_process);
}

TEST(ProgramModelStages, ABatchFlagOfTheWholeStepIsSeenAsSuch) {
  const TrialLogs one = probe_log(stage_events(0, 0, 1, 0, 3, 4));
  ProgramModel model;
  measure_step_batch(one, "--batch-size", 8, model);  // 4 micro-batches of 2
  EXPECT_TRUE(model.batch_flag_is_step);
  EXPECT_NE(model.batch_flag_evidence.find("--batch-size 8 is the whole step's batch"),
            std::string::npos)
      << model.batch_flag_evidence;
  ProgramModel micro;
  measure_step_batch(one, "--batch-size", 2, micro);  // the flag is the micro-batch
  EXPECT_FALSE(micro.batch_flag_is_step);
  ProgramModel no_stages;
  measure_step_batch(probe_log(R"({"ev":"batch","rank":0,"input_shape":[2,6]}
{"ev":"step","rank":0,"global_step":0,"loss_count":4})"
                               "\n"),
                     "--batch-size", 8, no_stages);
  EXPECT_FALSE(no_stages.batch_flag_is_step) << "an accumulation without stages is no pipeline";
}

}  // namespace
}  // namespace bigmac::adopt
