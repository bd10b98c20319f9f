// Each text class from fixture logs written in the formats PyTorch 1.13/2.x, c10d, Gloo, NCCL
// and torchrun print (multi-rank interleaving, `[rankN]:`/`[defaultN]:` prefixes, tracebacks).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "builtin_diagnoser.h"
#include "diagnose/diagnoser.h"
#include "diagnose/log_reading.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;

const Diagnoser& diagnoser() { return test_support::builtin_diagnoser(); }

// A rank that exited non-zero by itself with these last stderr lines.
launch::RankEnding ended_with(int rank, std::vector<std::string> lines) {
  launch::RankEnding ending;
  ending.known = true;
  ending.exit_code = 1;
  ending.rank = rank;
  ending.error_lines = std::move(lines);
  return ending;
}

std::vector<Diagnosis> diagnose_fixture(const std::string& relative) {
  auto files =
      collect_log_files({std::string(BIGMAC_SOURCE_DIR "/tests/diagnose/fixtures/") + relative});
  EXPECT_TRUE(files) << files.error().format();
  std::vector<logs::RankLog> logs;
  for (const auto& f : *files) {
    auto ranks = read_log_records(f);
    EXPECT_TRUE(ranks);
    if (ranks) std::move(ranks->begin(), ranks->end(), std::back_inserter(logs));
  }
  MetricInput input;
  input.logs = logs;
  return diagnoser().diagnose(input);
}

struct Case {
  const char* fixture;
  const char* top_id;  ///< the best diagnosis
  const char* klass;
  const char* gate;
  const char* symptom;  ///< a substring of its symptom (captures filled in)
  int failed_rank;      ///< -2: not checked
  int evidence_rank;    ///< rank of the first evidence line; -2: not checked
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.fixture; }

class TextSignature : public ::testing::TestWithParam<Case> {};

TEST_P(TextSignature, TopDiagnosisNamesClassCaptureAndGate) {
  const Case& c = GetParam();
  const auto diagnoses = diagnose_fixture(c.fixture);
  ASSERT_FALSE(diagnoses.empty());
  const Diagnosis& top = diagnoses.front();
  EXPECT_EQ(top.id, c.top_id);
  EXPECT_EQ(top.klass, c.klass);
  EXPECT_EQ(top.gate, c.gate);
  EXPECT_THAT(top.symptom, HasSubstr(c.symptom));
  EXPECT_THAT(top.symptom + top.cause + top.fix, ::testing::Not(HasSubstr("?")));
  if (c.failed_rank != -2) {
    EXPECT_EQ(top.failed_rank, c.failed_rank);
  }
  ASSERT_FALSE(top.evidence.empty());
  EXPECT_GT(top.evidence.front().line, 0);
  EXPECT_FALSE(top.evidence.front().file.empty());
  if (c.evidence_rank != -2) {
    EXPECT_EQ(top.evidence.front().rank, c.evidence_rank);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, TextSignature,
    ::testing::Values(
        Case{"rendezvous/store_barrier_113", "store_based_barrier_timeout", "rendezvous_timeout",
             "dp", "2 of 4 ranks", 0, 0},
        Case{"rendezvous/tcpstore_clients_2x.log", "tcpstore_clients_timeout", "rendezvous_timeout",
             "dp", "only 1 of 2 ranks joined", -2, 0},
        Case{"rendezvous/client_connect_timeout.log", "store_client_connect_timeout",
             "rendezvous_timeout", "dp", "1800s to reach the rendezvous store at 10.0.0.7:29501", 1,
             1},
        Case{"port/eaddrinuse_113.log", "c10d_bind_eaddrinuse", "port_in_use", "dp", "port 29500",
             0, 0},
        Case{"port/eaddrinuse_libuv.log", "c10d_bind_eaddrinuse", "port_in_use", "dp", "port 29512",
             0, 0},
        // libuv's multi-line form: the lines joined give the one-line form and its port.
        Case{"port/eaddrinuse_multiline.log", "c10d_bind_eaddrinuse", "port_in_use", "dp",
             "port 29500", -2, -2},
        Case{"refused/c10d_refused.log", "c10d_connection_refused", "connection_refused", "dp",
             "[localhost]:29500", 1, 1},
        Case{"refused/python_refused.log", "connection_refused_generic", "connection_refused", "dp",
             "could not connect", -2, -2},
        Case{"nccl/duplicate_gpu.log", "nccl_duplicate_gpu", "nccl_duplicate_gpu", "dp",
             "ranks 1 and 0 run on the same GPU (bus id 1000)", 1, 1},
        Case{"nccl/no_gpu.log", "nccl_no_gpu", "nccl_no_device", "dp", "no usable GPU", -2, -2},
        Case{"nccl/unhandled_cuda.log", "nccl_unhandled_cuda_error", "nccl_cuda_error", "dp",
             "unhandled CUDA", 7, 7},
        Case{"nccl/system_error.log", "nccl_system_error", "nccl_system_error", "dp",
             "unhandled system error", 3, 3},
        Case{"nccl/watchdog_113.log", "nccl_watchdog_timeout", "collective_timeout", "dp",
             "rank 1 waited 1802212 ms in collective ALLREDUCE (sequence 469508, timeout 1800000 "
             "ms)",
             1, -2},
        Case{"nccl/gloo_timeout.log", "gloo_op_timeout", "collective_timeout", "dp",
             "Gloo recv waited 1800000 ms", 1, 1},
        Case{"model/size_mismatch.log", "state_dict_size_mismatch", "state_dict_mismatch", "single",
             "layers.4.mlp.fc1.weight is torch.Size([1024, 256]) in the checkpoint but "
             "torch.Size([1024, 512])",
             1, 1},
        Case{"model/missing_keys.log", "state_dict_key_mismatch", "state_dict_mismatch", "single",
             "\"layers.3.attn.qkv.weight\"", -2, -2},
        Case{"model/device_mismatch_old.log", "tensors_on_two_devices", "device_mismatch", "dp",
             "cuda:1 and cpu", 1, 1},
        Case{"model/device_mismatch_new.log", "tensors_on_two_devices", "device_mismatch", "dp",
             "cpu and cuda:1", 1, 1},
        Case{"model/mat_shapes.log", "matmul_shape_mismatch", "shape_mismatch", "shapes",
             "64x32 and 64x256: the inner sizes 32 and 64 differ", 1, 1},
        Case{"model/view_invalid.log", "view_shape_invalid", "shape_mismatch", "shapes",
             "reshaping to [2, 32, 64] failed: the input has 3072 elements", 1, 1},
        Case{"memory/cuda_oom_113.log", "cuda_out_of_memory", "out_of_memory", "single",
             "allocating 20.00 MiB", -2, -2},
        Case{"memory/cpu_oom.log", "cpu_out_of_memory", "out_of_memory", "single",
             "17179869184 bytes", -2, -2},
        // torch 2.11's Gloo worker killed at interpreter exit: ranked above torchrun's summary.
        Case{"children/gloo_exit_abort.log", "terminate_without_exception", "native_thread_abort",
             "dp", "std::terminate with no exception in flight", 1, 1},
        // A DataLoader worker killed by SIGBUS and SIGKILL (fixtures/children/README.md): the
        // signal, not the chained "exited unexpectedly" below it, is the diagnosis.
        Case{"children/dataloader_bus_error.log", "dataloader_worker_bus_error",
             "dataloader_worker", "single", "DataLoader worker (pid 8554)", -2, -2},
        Case{"children/dataloader_killed.log", "dataloader_worker_killed", "out_of_memory",
             "single", "DataLoader worker (pid 8578) was killed by SIGKILL", -2, -2},
        Case{"children/shell_killed.log", "shell_killed", "out_of_memory", "single", "`Killed`", -2,
             -2},
        Case{"children/spawn.log", "mp_spawn_process_failed", "child_failed", "single",
             "process 2 terminated", 2, -2},
        Case{"numerics/anomaly.log", "autograd_nan", "non_finite", "single", "LogSoftmaxBackward0",
             0, 0},
        Case{"numerics/clip.log", "clip_grad_non_finite", "non_finite", "single", "non-finite", -2,
             -2},
        Case{"numerics/scale_min.log", "loss_scale_underflow", "loss_scale_underflow", "single",
             "minimum", -2, -2},
        Case{"numerics/apex_overflow.log", "apex_gradient_overflow", "gradient_overflow", "single",
             "lowered to 32768.0", -2, -2},
        // Captured from /usr/bin/python3 and torch 1.13 writing to /dev/full (ENOSPC).
        Case{"disk/python_enospc.log", "disk_full", "disk_full", "single", "no space left", -2, -2},
        Case{"disk/torch_save_full.log", "disk_full", "disk_full", "single", "no space left", -2,
             -2}));

// The same classes from output captured from real PyTorch 1.13 runs (fixtures/torch113/README.md).
INSTANTIATE_TEST_SUITE_P(
    RealTorch113, TextSignature,
    ::testing::Values(
        Case{"torch113/child_fail.log", "matmul_shape_mismatch", "shape_mismatch", "shapes",
             "4x32 and 64x256", 1, 1},
        Case{"torch113/gloo_timeout.log", "gloo_op_timeout", "collective_timeout", "dp",
             "Gloo recv waited 3000 ms", 0, 0},
        Case{"torch113/port.log", "c10d_bind_eaddrinuse", "port_in_use", "dp", "port 29615", -2,
             -2},
        Case{"torch113/hang_rank0.log", "gloo_socket_timeout", "rendezvous_timeout", "dp",
             "Socket Timeout", -2, -2},
        Case{"torch113/refused_rank1.log", "store_client_connect_timeout", "rendezvous_timeout",
             "dp", "4s to reach the rendezvous store at 127.0.0.1:29614", -2, -2},
        // One process (its traceback names no launcher, rank or split layer): the model's own
        // sizes, found at the single gate, not a pipeline cut.
        Case{"torch113/mat.log", "matmul_shape_mismatch", "shape_mismatch", "single",
             "64x32 and 64x256", -2, -2},
        Case{"torch113/view.log", "view_shape_invalid", "shape_mismatch", "shapes",
             "reshaping to [2, 32, 64] failed: the input has 3072 elements", -2, -2},
        Case{"torch113/size.log", "state_dict_size_mismatch", "state_dict_mismatch", "single",
             "0.weight is torch.Size([1024, 256]) in the checkpoint but torch.Size([1024, 512])",
             -2, -2},
        Case{"torch113/keys.log", "state_dict_key_mismatch", "state_dict_mismatch", "single",
             "\"0.weight\"", -2, -2},
        Case{"torch113/clip.log", "clip_grad_non_finite", "non_finite", "single", "non-finite", -2,
             -2},
        Case{"torch113/anomaly.log", "autograd_nan", "non_finite", "single", "SqrtBackward0", -2,
             -2},
        Case{"torch113/oom.log", "cpu_out_of_memory", "out_of_memory", "single",
             "4503599627370496 bytes", -2, -2}));

TEST(TextSignatures, RealRunTheSpecificErrorBeatsTorchrunsRootCauseGuess) {
  // torchrun names rank 0 as the first failure (its "Connection closed by peer" came first), but
  // rank 1's shape error caused it: the specific signature ranks first, all are shown. Rank 0's
  // "closed by peer" is a consequence, not its own cause: torchrun's line about rank 0 keeps its
  // place, and the peer's line comes last.
  const auto diagnoses = diagnose_fixture("torch113/child_fail.log");
  std::vector<std::string> ids;
  for (const Diagnosis& d : diagnoses) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"matmul_shape_mismatch", "torchrun_root_cause",
                                           "torchrun_failure_entry", "torchrun_worker_failed",
                                           "peer_closed_connection"}));
  EXPECT_EQ(diagnoses[1].failed_rank, 0);
}

TEST(TextSignatures, RealRunPeerThatExitedSilently) {
  const auto diagnoses = diagnose_fixture("torch113/peer_exit.log");
  auto peer = std::find_if(diagnoses.begin(), diagnoses.end(),
                           [](const Diagnosis& d) { return d.id == "peer_closed_connection"; });
  ASSERT_NE(peer, diagnoses.end());
  EXPECT_THAT(peer->evidence.front().text, HasSubstr("Connection reset by peer"));
  EXPECT_EQ(peer->evidence.front().rank, 0);
}

TEST(TextSignatures, WatchdogTimeoutsRankBelowTheOutOfMemoryThatCausedThem) {
  const auto diagnoses = diagnose_fixture("nccl/watchdog_after_oom");
  ASSERT_GE(diagnoses.size(), 2u);
  EXPECT_EQ(diagnoses[0].id, "cuda_out_of_memory");
  EXPECT_EQ(diagnoses[0].failed_rank, 2);
  EXPECT_THAT(diagnoses[0].symptom, HasSubstr("22.78 GiB"));
  EXPECT_EQ(diagnoses[1].id, "nccl_watchdog_timeout");
  EXPECT_EQ(diagnoses[1].matches, 3);
  EXPECT_EQ(diagnoses[1].evidence.size(), 3u);
}

TEST(TextSignatures, TorchrunSummaryNamesTheRootCauseRankFromLaterLines) {
  const auto diagnoses = diagnose_fixture("children/sigkill.log");
  auto root = std::find_if(diagnoses.begin(), diagnoses.end(),
                           [](const Diagnosis& d) { return d.id == "torchrun_root_cause"; });
  ASSERT_NE(root, diagnoses.end());
  EXPECT_EQ(root->failed_rank, 1);
  EXPECT_THAT(root->symptom, HasSubstr("rank 1 failed first (exitcode -9)"));
  // The signal line is more specific than the summary, and both are shown.
  EXPECT_EQ(diagnoses.front().id, "torchrun_signal");
  EXPECT_THAT(diagnoses.front().symptom, HasSubstr("signal 9 (SIGKILL)"));
}

TEST(TextSignatures, FallbackOnlyWhereNothingSpecificMatched) {
  // spawn.log ends in `ValueError: stage 2 got no layers`: no signature explains it.
  const auto spawn = diagnose_fixture("children/spawn.log");
  auto generic = std::find_if(spawn.begin(), spawn.end(),
                              [](const Diagnosis& d) { return d.id == "python_exception"; });
  ASSERT_NE(generic, spawn.end());
  EXPECT_TRUE(
      std::any_of(generic->evidence.begin(), generic->evidence.end(),
                  [](const Evidence& e) { return e.text == "ValueError: stage 2 got no layers"; }));
  EXPECT_EQ(spawn.back().id, "python_exception");
  // mat_shapes.log's RuntimeError line is explained by a signature: no fallback for it.
  for (const Diagnosis& d : diagnose_fixture("model/mat_shapes.log"))
    EXPECT_NE(d.id, "python_exception");
}

TEST(TextSignatures, PeerClosedConnectionIsAConsequenceRankedLast) {
  const auto diagnoses = diagnose_fixture("model/mat_shapes.log");
  ASSERT_EQ(diagnoses.size(), 2u);
  EXPECT_EQ(diagnoses[0].id, "matmul_shape_mismatch");
  EXPECT_EQ(diagnoses[1].id, "peer_closed_connection");
  EXPECT_EQ(diagnoses[1].evidence.front().rank, 0);
}

TEST(TextSignatures, FallbackInsideAnExplainedTracebackIsDropped) {
  // "RuntimeError: Error(s) in loading state_dict ..." sits next to the size-mismatch line that
  // explains it: no unclassified error besides.
  const auto diagnoses = diagnose_fixture("torch113/size.log");
  ASSERT_EQ(diagnoses.size(), 1u);
  EXPECT_EQ(diagnoses[0].id, "state_dict_size_mismatch");
}

TEST(TextSignatures, SlurmNodeFailureNamesTheNode) {
  // srun 22.05.8 and slurmstepd on the local test cluster, n2 set down mid-step.
  const auto diagnoses = diagnose_fixture("slurm/node_failure.log");
  ASSERT_GE(diagnoses.size(), 2u);
  EXPECT_EQ(diagnoses[0].id, "slurm_node_failure");
  EXPECT_EQ(diagnoses[0].klass, "node_failure");
  EXPECT_THAT(diagnoses[0].symptom, HasSubstr("node n2 failed"));
  EXPECT_EQ(diagnoses[1].id, "slurm_step_cancelled_node_failure");
}

TEST(TextSignatures, AFailedRanksOwnLastLinesAreMatchedFirst) {
  auto files = collect_log_files(
      {std::string(BIGMAC_SOURCE_DIR "/tests/diagnose/fixtures/nccl/watchdog_after_oom")});
  ASSERT_TRUE(files);
  std::vector<logs::RankLog> logs;
  for (const auto& f : *files) {
    auto ranks = read_log_records(f);
    ASSERT_TRUE(ranks);
    std::move(ranks->begin(), ranks->end(), std::back_inserter(logs));
  }
  // Alone, the out-of-memory line (specificity 95) leads; the rank that exited non-zero said
  // something else on its stderr, and that is matched before everything else.
  const std::vector<launch::RankEnding> own = {ended_with(
      1, {"Traceback (most recent call last):", "RuntimeError: Address already in use"})};
  MetricInput input;
  input.logs = logs;
  input.exit_errors = own;
  const auto diagnoses = diagnoser().diagnose(input);
  ASSERT_GE(diagnoses.size(), 2u);
  EXPECT_EQ(diagnoses[0].id, "eaddrinuse_generic");
  EXPECT_EQ(diagnoses[0].failed_rank, 1);
  EXPECT_EQ(diagnoses[0].evidence.front().file, "rank1.stderr (last lines)");
  EXPECT_EQ(diagnoses[1].id, "cuda_out_of_memory");
  // A signature found in those lines is not repeated from the full logs.
  const std::vector<launch::RankEnding> oom = {
      ended_with(2, {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. "
                     "GPU 2 has a total capacity of 79.11 GiB of which 12.73 GiB is free. "
                     "Including non-PyTorch memory, this process has 66.37 GiB memory in use."})};
  input.exit_errors = oom;
  const auto again = diagnoser().diagnose(input);
  EXPECT_EQ(std::count_if(again.begin(), again.end(),
                          [](const Diagnosis& d) { return d.id == "cuda_out_of_memory"; }),
            1);
  EXPECT_EQ(again[0].id, "cuda_out_of_memory");
}

// A real torchrun run (fixtures/children/README.md) whose rank 1 raised its own AttributeError
// after training: that error is the headline, torchrun's summary of the failed rank follows it,
// and the worker's lines, in torchrun's console copy and its own stdout.log, are read once.
TEST(TextSignatures, ARanksOwnErrorLeadsTorchrunsSummaryOfIt) {
  const auto diagnoses = diagnose_fixture("children/end_crash");
  ASSERT_GE(diagnoses.size(), 2u);
  EXPECT_EQ(diagnoses.front().id, "python_exception");
  EXPECT_THAT(diagnoses.front().symptom, HasSubstr("AttributeError"));
  EXPECT_EQ(diagnoses.front().failed_rank, 1);
  EXPECT_EQ(diagnoses[1].klass, "child_failed");
  for (const Diagnosis& d : diagnoses) EXPECT_NE(d.klass, "step_sequence") << d.symptom;
}

struct LineCase {
  const char* text;  ///< lines as a user's log has them
  const char* id;
  const char* klass;
  const char* symptom;
};

// Shapes of failure that recur beyond the log they were first read in (the corpus's third
// round): each from the lines alone.
TEST(TextSignatures, FailuresThatRecurAcrossPrograms) {
  const LineCase cases[] = {
      // The NCCL watchdog's native stack after a timeout, its own message not in the excerpt.
      {"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
       "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f9391ba8c62 in libtorch_cuda.so)\n"
       "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1a0 (0x7f9391bada80 in "
       "libtorch_cuda.so)\n",
       "nccl_watchdog_timeout_stack", "collective_timeout", "checkTimeout"},
      // A script that reads the launcher's variables, run without the launcher.
      {"    rank = int(os.environ['RANK'])\n  File \"/usr/lib/python3.6/os.py\", line 669, in "
       "__getitem__\n    raise KeyError(key) from None\nKeyError: 'RANK'\n",
       "launcher_variable_unset", "launch_env", "read RANK from the environment"},
      // A batch the program asserts divides by its devices.
      {"  File \"train_matching.py\", line 70, in train_model\n"
       "    assert args.batch_size % len(devices) == 0\nAssertionError\n",
       "batch_split_assert", "batch_accounting", "assert args.batch_size % len(devices) == 0"},
      // Megatron's ensure_divisibility (and ColossalAI's copy): heads over tensor-parallel ranks.
      {"    assert numerator % denominator == 0, \\\nAssertionError: 96 is not divisible by 64\n",
       "parallel_split_not_divisible", "shape_mismatch", "96 is not divisible by 64"},
  };
  for (const LineCase& c : cases) {
    const std::string path = ::testing::TempDir() + "/recurring.log";
    {
      std::ofstream out(path);
      out << c.text;
    }
    auto ranks = read_log_records(path);
    ASSERT_TRUE(ranks) << c.id;
    MetricInput input;
    input.logs = *ranks;
    const auto diagnoses = diagnoser().diagnose(input);
    ASSERT_FALSE(diagnoses.empty()) << c.id;
    EXPECT_EQ(diagnoses[0].id, c.id) << c.text;
    EXPECT_EQ(diagnoses[0].klass, c.klass) << c.id;
    EXPECT_THAT(diagnoses[0].symptom, HasSubstr(c.symptom)) << c.id;
    std::filesystem::remove(path);
  }
}

TEST(TextSignatures, CleanRunHasNoDiagnosis) { EXPECT_TRUE(diagnose_fixture("clean").empty()); }

}  // namespace
}  // namespace bigmac::diagnose
