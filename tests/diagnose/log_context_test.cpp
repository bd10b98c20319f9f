// Causes in context: what a log shows of how its program ran (ranks, launcher, world size,
// nn.DataParallel, stages), and a signature's `when` words chosen from it.

#include "diagnose/log_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "builtin_diagnoser.h"
#include "config/data_file.h"
#include "diagnose/catalog.h"
#include "diagnose/text_scan.h"
#include "logs/log_stream.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;

LogContext read(const std::string& text) {
  logs::LogStream stream;
  std::vector<logs::Record> records;
  stream.feed(text, records);
  stream.finish(records);
  LogContext context;
  for (const auto& r : records) {
    if (const auto* line = std::get_if<logs::TextLine>(&r)) context.read(*line);
  }
  return context;
}

TEST(LogContext, AnExcerptWithoutSignsIsNeitherOneProcessNorParallel) {
  const LogContext c = read("RuntimeError: CUDA error: invalid device ordinal\n");
  EXPECT_FALSE(c.parallel());
  EXPECT_TRUE(c.holds("no_sign_of_parallel"));
  // Only a gate's layout says there is one process or one stage.
  EXPECT_FALSE(c.holds("one_process"));
  EXPECT_FALSE(c.holds("no_pipeline"));
  EXPECT_FALSE(c.holds("pipeline"));
}

TEST(LogContext, LaunchersRanksAndWorldSizeFromTheLines) {
  EXPECT_EQ(read("$ torchrun --standalone --nproc_per_node=2 train.py\n").launcher, "torchrun");
  EXPECT_EQ(read("$ torchrun --standalone --nproc_per_node=2 train.py\n").world_size, 2);
  EXPECT_EQ(read("Killing subprocess 27636\n").launcher, "torchrun");
  EXPECT_EQ(read("srun: error: node3: task 1: Exited with exit code 1\n").launcher, "slurm");
  // accelerate starts torchrun's agent: the launcher above it names the run.
  EXPECT_EQ(read("torch.distributed.elastic.multiprocessing.api: failed\n"
                 "  File \"/x/accelerate/commands/launch.py\", line 1, in launch_command\n")
                .launcher,
            "accelerate");
  EXPECT_TRUE(read("[rank1]: RuntimeError: boom\n").parallel());
  EXPECT_FALSE(read("[rank0]: RuntimeError: boom\n").parallel());
  EXPECT_TRUE(read("    torch.cuda.set_device(args.local_rank)\n").parallel());
  const LogContext dp = read("  File \"/x/torch/nn/parallel/data_parallel.py\", line 9\n");
  EXPECT_TRUE(dp.data_parallel_module);
  EXPECT_TRUE(dp.holds("data_parallel_module"));
  EXPECT_TRUE(read("  File \"/x/torch/distributed/pipelining/stage.py\", line 9\n").pipeline());
  EXPECT_TRUE(read("srun: x\n").holds("not_torchrun"));
}

// A traceback's frames are the call stack: when none of them (nor any other line) names a
// launcher, a rank, stages or a tensor-parallel layer, the program ran as one process.
TEST(LogContext, AStackThatNamesNoParallelLayerIsOneProcess) {
  const std::string frames =
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 41, in <module>\n"
      "    out = model(x)\n";
  const LogContext plain = read(frames +
                                "RuntimeError: mat1 and mat2 shapes cannot be "
                                "multiplied (4x8 and 16x2)\n");
  EXPECT_TRUE(plain.stack_frames);
  EXPECT_TRUE(plain.holds("stack_without_parallel"));
  EXPECT_TRUE(plain.holds("no_sign_of_parallel"));
  // An excerpt with no frames says nothing of the stack.
  EXPECT_FALSE(read("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)\n")
                   .holds("stack_without_parallel"));
  // The frame's path is still read: torchrun's own frame names the launcher.
  const LogContext run =
      read(frames + "  File \"/usr/lib/python3/torch/distributed/run.py\", line 7, in main\n");
  EXPECT_EQ(run.launcher, "torchrun");
  EXPECT_FALSE(run.holds("stack_without_parallel"));
  // A tensor-parallel layer in the stack makes the run parallel.
  const LogContext tp =
      read(frames + "  File \"/x/megatron/core/tensor_parallel/layers.py\", line 9, in forward\n");
  EXPECT_TRUE(tp.tensor_parallel_words);
  EXPECT_TRUE(tp.parallel());
  EXPECT_FALSE(tp.holds("stack_without_parallel"));
  // So does a pipeline one.
  EXPECT_FALSE(
      read(frames + "  File \"/x/torch/distributed/pipelining/stage.py\", line 9, in step\n")
          .holds("stack_without_parallel"));
}

TEST(LogContext, AGateLayoutIsKnownAndWinsOverAbsentSigns) {
  LogContext known;
  known.known_world_size = 1;
  known.stages = 1;
  LogContext c = read("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)\n");
  c.merge(known);
  EXPECT_TRUE(c.holds("one_process"));
  EXPECT_TRUE(c.holds("no_pipeline"));
  known.stages = 2;
  known.known_world_size = 2;
  LogContext p;
  p.merge(known);
  EXPECT_TRUE(p.pipeline());
  EXPECT_TRUE(p.parallel());
}

std::vector<Diagnosis> scan(const std::string& text, const LogContext& known = {}) {
  static const Catalog catalog = *builtin_catalog();
  static const TextMatcher matcher = *TextMatcher::build(catalog);
  TextScan s(matcher);
  s.begin_file("x.log");
  logs::LogStream stream;
  std::vector<logs::Record> records;
  stream.feed(text, records);
  stream.finish(records);
  for (const auto& r : records) {
    if (const auto* line = std::get_if<logs::TextLine>(&r)) s.add_line(*line);
  }
  return s.finish(known);
}

// The matmul-shape signature blamed a pipeline cut everywhere (issue 29): now only where the
// run may have stages; one process on its own is the single gate.
TEST(SignatureWhen, AShapeErrorIsAPipelineCutOnlyWhereThereMayBeStages) {
  const std::string line =
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x32 and 64x256)\n";
  LogContext one;
  one.known_world_size = 1;
  const auto single = scan(line, one);
  ASSERT_FALSE(single.empty());
  EXPECT_EQ(single[0].id, "matmul_shape_mismatch");
  EXPECT_EQ(single[0].gate, "single");
  EXPECT_THAT(single[0].cause, ::testing::Not(HasSubstr("stage")));
  LogContext data_parallel;
  data_parallel.known_world_size = 2;
  data_parallel.stages = 1;
  EXPECT_EQ(scan(line, data_parallel)[0].gate, "single");
  LogContext pipeline;
  pipeline.known_world_size = 2;
  pipeline.stages = 2;
  EXPECT_EQ(scan(line, pipeline)[0].gate, "shapes");
  EXPECT_THAT(scan(line, pipeline)[0].cause, HasSubstr("stage"));
  // A log alone: a traceback whose stack names no parallel layer is single-process code; a
  // bare line with no stack stays unsure (not the single gate on a guess).
  const std::string stack =
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 41, in <module>\n"
      "    out = model(x)\n" +
      line;
  EXPECT_EQ(scan(stack)[0].gate, "single");
  EXPECT_THAT(scan(stack)[0].cause, HasSubstr("traceback"));
  EXPECT_NE(scan(line)[0].gate, "single");
}

// A library's message takes its class's words in context too ([[class.when]]): the THC
// spelling of the device-ordinal error, which only CUDA's collected message knows, is a rank
// mapping under ranks (HRNet-Semantic-Segmentation#171: --nproc_per_node above the GPUs).
TEST(SignatureWhen, ALibrarysMessageIsARankMappingWhereThereAreRanks) {
  const std::string error =
      "RuntimeError: cuda runtime error (10) : invalid device ordinal at "
      "/pytorch/torch/csrc/cuda/Module.cpp:33\n";
  const auto bare = scan(error);
  ASSERT_FALSE(bare.empty());
  EXPECT_EQ(bare[0].klass, "nccl_no_device");
  EXPECT_EQ(bare[0].gate, "single");
  const auto ranked = scan(error +
                           "  File \"tools/train.py\", line 98, in main\n"
                           "    torch.cuda.set_device(args.local_rank)\n");
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].klass, "nccl_no_device");
  EXPECT_EQ(ranked[0].gate, "dp");
  EXPECT_THAT(ranked[0].cause, HasSubstr("LOCAL_RANK"));
  EXPECT_THAT(ranked[0].cause, HasSubstr("(the error of cuda")) << "the source is still named";
}

TEST(SignatureWhen, ADeviceOrdinalIsARankMappingOnlyWhereThereAreRanks) {
  const std::string bare = "RuntimeError: CUDA error: invalid device ordinal\n";
  EXPECT_EQ(scan(bare)[0].gate, "single");
  const auto ranked = scan("    torch.cuda.set_device(args.local_rank)\n" + bare);
  EXPECT_EQ(ranked[0].gate, "dp");
  EXPECT_THAT(ranked[0].cause, HasSubstr("LOCAL_RANK"));
}

TEST(SignatureWhen, TheDuplicateGpuFixNamesTheLauncherInUse) {
  const std::string line =
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1, invalid usage, "
      "NCCL version 2.18.1\nncclInvalidUsage: This usually reflects invalid usage of NCCL "
      "library.\nLast error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device "
      "1a000\n";
  const auto by_srun = scan("srun: launching 2 tasks\n" + line);
  const auto it = std::find_if(by_srun.begin(), by_srun.end(),
                               [](const Diagnosis& d) { return d.id == "nccl_duplicate_gpu"; });
  ASSERT_NE(it, by_srun.end());
  EXPECT_THAT(it->fix, HasSubstr("SLURM_LOCALID"));
  const auto by_torchrun = scan("torchrun --nproc_per_node=2 x.py\n" + line);
  const auto t = std::find_if(by_torchrun.begin(), by_torchrun.end(),
                              [](const Diagnosis& d) { return d.id == "nccl_duplicate_gpu"; });
  ASSERT_NE(t, by_torchrun.end());
  EXPECT_THAT(t->fix, HasSubstr("LOCAL_RANK"));
  EXPECT_THAT(t->fix, ::testing::Not(HasSubstr("SLURM_LOCALID")));
}

const Diagnosis* with_id(const std::vector<Diagnosis>& all, const std::string& id) {
  for (const Diagnosis& d : all) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

// Issue 29: a timeout of the first collective after a long data-preparation bar is a rank
// still preparing data, not a desync.
TEST(SignatureWhen, AFirstCollectiveTimeoutAfterAProgressBarIsDataPreparation) {
  const std::string timeout =
      "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
      "ran for 1800490 milliseconds before timing out.\n";
  const std::string bar =
      "[rank0]:Running tokenizer on dataset:  97%|#########7| 9700/10000 [29:40<00:55, 5.4ex/s]\n";
  const auto prepared = scan(bar + timeout);
  const Diagnosis* d = with_id(prepared, "nccl_watchdog_first_collective");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->cause, HasSubstr("preparing data"));
  EXPECT_EQ(with_id(prepared, "nccl_watchdog_timeout"), nullptr) << "one line, one diagnosis";
  const auto bare = scan(timeout);
  ASSERT_NE(with_id(bare, "nccl_watchdog_first_collective"), nullptr);
  EXPECT_THAT(with_id(bare, "nccl_watchdog_first_collective")->cause,
              ::testing::Not(HasSubstr("progress bar")));
}

// NCCL's INFO lines already in the log are read, not asked for again; a variable the
// environment set is named.
TEST(SignatureWhen, NcclInfoInTheLogAndTheVariableItSaysIsSet) {
  const std::string error =
      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
      "unhandled system error, NCCL version 2.14.3\n";
  EXPECT_THAT(scan(error)[0].fix, HasSubstr("rerun with NCCL_DEBUG=INFO"));
  const auto with_info =
      scan("node1:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n" + error);
  EXPECT_THAT(with_info[0].fix, HasSubstr("above this error"));
  EXPECT_THAT(with_info[0].fix, ::testing::Not(HasSubstr("rerun with NCCL_DEBUG=INFO")));

  const std::string xml =
      "node1:7:7 [0] graph/xml.cc:654 NCCL WARN Could not open XML graph file /opt/g.xml : No "
      "such file or directory\n";
  const auto set = scan(
      "node1:7:7 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to "
      "/opt/g.xml\n" +
      xml);
  const Diagnosis* d = with_id(set, "nccl_xml_file_unreadable");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->fix, HasSubstr("unset NCCL_GRAPH_FILE"));
  EXPECT_THAT(with_id(scan(xml), "nccl_xml_file_unreadable")->cause,
              ::testing::Not(HasSubstr("NCCL's INFO lines say so")));
}

TEST(SignatureWhen, AnUnknownContextIsAnErrorNamingTheEntry) {
  auto file = config::parse_data_file(R"(
[[signature]]
id = "x"
class = "port_in_use"
gate = "dp"
symptom = "s"
cause = "c"
fix = "f"
patterns = ['boom']

[[signature.when]]
context = "pipelines"
gate = "single"
)",
                                      "cat.toml");
  ASSERT_TRUE(file);
  auto catalog = parse_catalog(*file);
  ASSERT_FALSE(catalog);
  EXPECT_THAT(catalog.error().format(), HasSubstr("unknown context `pipelines`"));
  EXPECT_THAT(catalog.error().format(), HasSubstr("did you mean `pipeline`?"));
  EXPECT_EQ(catalog.error().line, 12);
}

}  // namespace
}  // namespace bigmac::diagnose
