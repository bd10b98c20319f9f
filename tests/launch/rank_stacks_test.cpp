#include "launch/rank_stacks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <initializer_list>
#include <map>
#include <string>

extern char** environ;

namespace bigmac::launch {
namespace {

// A dump as Python 3.11's faulthandler.dump_traceback(all_threads=True) printed it.
constexpr std::string_view kDump = R"(Thread 0x00007f0bdc4d86c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 622 in wait
  File "/tmp/fh/dump.py", line 4 in worker
  File "/usr/lib/python3.11/threading.py", line 975 in run

Current thread 0x00007f0bdc793040 (most recent call first):
  File "/tmp/fh/dump.py", line 7 in load_batch
  File "/tmp/fh/dump.py", line 9 in main
  File "/tmp/fh/dump.py", line 12 in <module>
)";

const std::vector<std::string> kLibraries = {"/usr/lib/python3.11",
                                             "/usr/lib/python3/dist-packages",
                                             "/opt/venv/lib/python3.11/site-packages"};

StackFrame frame(std::string file, int line, std::string function) {
  return {std::move(file), line, std::move(function)};
}

TEST(RankStacks, TheMainThreadsBlockIsReadByItsIdWhateverItsPlace) {
  const std::vector<StackFrame> frames = main_thread_frames(kDump, "0x7f0bdc793040");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].file, "/tmp/fh/dump.py");
  EXPECT_EQ(frames[0].line, 7);
  EXPECT_EQ(frames[0].function, "load_batch");
  EXPECT_EQ(frames[2].function, "<module>");
  // The other thread, named by its id, is read the same way.
  EXPECT_EQ(main_thread_frames(kDump, "0x7f0bdc4d86c0").at(2).function, "worker");
  EXPECT_TRUE(main_thread_frames(kDump, "0x1234").empty());
  EXPECT_TRUE(main_thread_frames(kDump, "not hex").empty());
}

TEST(RankStacks, ARankSleepingInItsOwnCodeIsElsewhere) {
  const RankStack s = read_stack(1, main_thread_frames(kDump, "0x7f0bdc793040"), kLibraries);
  EXPECT_FALSE(s.waits_on_others);
  EXPECT_EQ(s.call, "");
  EXPECT_EQ(s.summary(), "at dump.py:7 in load_batch");
}

TEST(RankStacks, ACollectiveThroughTorchsDecoratorIsNamedByItsFunction) {
  // torch 2.x: dist.all_reduce is wrapped by c10d_logger's decorator.
  const std::string dist = "/opt/venv/lib/python3.11/site-packages/torch/distributed/";
  const RankStack s =
      read_stack(0,
                 {frame(dist + "distributed_c10d.py", 2501, "all_reduce"),
                  frame(dist + "c10d_logger.py", 81, "wrapper"),
                  frame("/work/train.py", 61, "main"), frame("/work/train.py", 90, "<module>")},
                 kLibraries);
  EXPECT_TRUE(s.waits_on_others);
  EXPECT_EQ(s.call, "all_reduce");
  EXPECT_EQ(s.summary(), "in all_reduce, called at train.py:61 in main");
}

TEST(RankStacks, BackwardWaitsOnOthersAndTheProbesFramesAreNotTheProgram) {
  const RankStack s = read_stack(
      0,
      {frame("/usr/lib/python3/dist-packages/torch/autograd/__init__.py", 197, "backward"),
       frame("/usr/lib/python3/dist-packages/torch/_tensor.py", 488, "backward"),
       frame("/src/probe/bigmac_probe/torch_patches.py", 40, "call"), frame("train.py", 30, "step"),
       frame("train.py", 50, "<module>")},
      kLibraries);
  EXPECT_TRUE(s.waits_on_others);
  EXPECT_EQ(s.summary(), "in backward, called at train.py:30 in step");
}

TEST(RankStacks, TheRankElsewhereGoesFirstOnlyWhenOthersWait) {
  const RankStack waiting = read_stack(
      0,
      {frame("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1, "barrier"),
       frame("/w/train.py", 88, "main")},
      kLibraries);
  RankStack asleep = read_stack(1, {frame("/w/data.py", 40, "load_batch")}, kLibraries);
  std::vector<Stall> stalls(2);
  stalls[0].rank = 0;
  stalls[1].rank = 1;
  attribute_stalls(stalls, {waiting, asleep}, {});
  ASSERT_EQ(stalls[0].rank, 1);
  EXPECT_EQ(stalls[0].stack, "at data.py:40 in load_batch");
  EXPECT_EQ(stalls[1].stack, "in barrier, called at train.py:88 in main");
  EXPECT_NE(stalls[0].describe().find("; main thread at data.py:40 in load_batch"),
            std::string::npos);

  // Nobody waits (both in their own code): the watchdog's order stands.
  std::vector<Stall> both(2);
  both[0].rank = 0;
  both[1].rank = 1;
  RankStack other = asleep;
  other.rank = 0;
  attribute_stalls(both, {other, asleep}, {});
  EXPECT_EQ(both[0].rank, 0);
}

logs::CollectiveRecord coll(int rank, std::int64_t seq, std::string op,
                            std::vector<std::int64_t> shape, std::string site) {
  logs::CollectiveRecord c;
  c.at.rank = rank;
  c.group = "world";
  c.seq = seq;
  c.op = std::move(op);
  c.shape = std::move(shape);
  if (!c.shape.empty()) c.dtype = "float32";
  c.site = std::move(site);
  return c;
}

// Each rank's ledger, its entries in the order given.
std::map<int, logs::RankLedger> ledgers(std::initializer_list<logs::CollectiveRecord> entries) {
  std::map<int, logs::RankLedger> out;
  for (const logs::CollectiveRecord& c : entries) out[c.at.rank].add(c);
  return out;
}

std::vector<Stall> stalls_of(std::initializer_list<int> ranks) {
  std::vector<Stall> stalls;
  for (int r : ranks) {
    stalls.emplace_back();
    stalls.back().rank = r;
  }
  return stalls;
}

TEST(RankStacks, TheRankThatNeverReachedTheCollectiveOthersCalledGoesFirst) {
  std::vector<Stall> stalls = stalls_of({0, 2, 1, 3});
  const auto last = ledgers({coll(0, 37, "all_reduce", {4096}, "train.py:61"),
                             coll(1, 36, "all_reduce", {4096}, "train.py:61"),
                             coll(2, 37, "all_reduce", {4096}, "train.py:61"),
                             coll(3, 37, "all_reduce", {4096}, "train.py:61")});
  attribute_stalls(stalls, {}, last);
  ASSERT_EQ(stalls[0].rank, 1);
  EXPECT_TRUE(stalls[0].behind);
  EXPECT_EQ(
      stalls[0].collective,
      "never reached all_reduce #37 of world (float32[4096], train.py:61), which ranks 0, 2, 3 "
      "called; its last: all_reduce #36 of world (float32[4096], train.py:61)");
  EXPECT_EQ(stalls[1].collective,
            "last collective all_reduce #37 of world (float32[4096], train.py:61)");
  // A rank that logged no collective at all is behind too.
  std::vector<Stall> none = stalls_of({0, 1});
  attribute_stalls(none, {}, ledgers({coll(0, 0, "barrier", {}, "train.py:5")}));
  EXPECT_EQ(none[0].rank, 1);
  EXPECT_EQ(none[0].collective,
            "never reached barrier #0 of world (train.py:5), which rank 0 called; its last: no "
            "collective on world");
}

TEST(RankStacks, AtOneIndexTheOddCallOutIsTheDesyncAndGoesFirst) {
  std::vector<Stall> stalls = stalls_of({0, 1, 2});
  const auto last = ledgers({coll(0, 7, "all_reduce", {1024}, "train.py:61"),
                             coll(1, 7, "all_reduce", {512}, "train.py:61"),
                             coll(2, 7, "all_reduce", {1024}, "train.py:61")});
  attribute_stalls(stalls, {}, last);
  ASSERT_EQ(stalls[0].rank, 1);
  EXPECT_TRUE(stalls[0].desync);
  EXPECT_EQ(stalls[0].collective,
            "called all_reduce #7 of world (float32[512], train.py:61) where rank 0 called "
            "all_reduce #7 of world (float32[1024], train.py:61): the ranks call different "
            "collectives at one index (desync)");
}

TEST(RankStacks, AtAPipelineCutTheRankThatNeverSentIsNamedNotTheOneInRecv) {
  // Rank 0 went through send #2 to rank 1 and all_reduce #5, then hangs in its data loading;
  // rank 1 waits in recv #3 from rank 0.
  logs::CollectiveRecord sent = coll(0, 2, "send", {2, 4}, "pipe.py:30");
  sent.group = "0->1";
  logs::CollectiveRecord received = coll(1, 2, "recv", {2, 4}, "pipe.py:35");
  received.group = "0->1";
  logs::CollectiveRecord waiting = received;
  waiting.seq = 3;
  const auto ledger = ledgers({sent, coll(0, 5, "all_reduce", {1, 4}, "pipe.py:42"), received,
                               coll(1, 5, "all_reduce", {1, 4}, "pipe.py:42"), waiting});
  const RankStack in_recv = read_stack(
      1,
      {frame("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1, "recv"),
       frame("/w/pipe.py", 35, "main")},
      kLibraries);
  const RankStack asleep = read_stack(0, {frame("/w/pipe.py", 20, "load_batch")}, kLibraries);
  std::vector<Stall> stalls = stalls_of({1, 0});
  attribute_stalls(stalls, {in_recv, asleep}, ledger);
  ASSERT_EQ(stalls[0].rank, 0);
  EXPECT_TRUE(stalls[0].behind);
  EXPECT_EQ(stalls[0].collective,
            "never reached recv #3 of 0->1 (float32[2,4], pipe.py:35), which rank 1 called; its "
            "last: send #2 of 0->1 (float32[2,4], pipe.py:30)");
  EXPECT_FALSE(stalls[1].behind);
  EXPECT_EQ(stalls[1].collective, "last collective recv #3 of 0->1 (float32[2,4], pipe.py:35)");
}

TEST(RankStacks, AWaitInACallTheOthersWentThroughBlamesNoOne) {
  // Without stacks both ranks count as waiting in their last calls: rank 1's all_reduce #5 is
  // one rank 0 went through, so nobody is behind on it; rank 1 is behind on rank 0's #6.
  const auto ledger =
      ledgers({coll(0, 6, "all_reduce", {4}, "t.py:9"), coll(1, 5, "all_reduce", {4}, "t.py:9")});
  std::vector<Stall> stalls = stalls_of({0, 1});
  attribute_stalls(stalls, {}, ledger);
  ASSERT_EQ(stalls[0].rank, 1);
  EXPECT_TRUE(stalls[0].behind);
  EXPECT_FALSE(stalls[1].behind);
}

TEST(RankStacks, WhereTheLedgersPartComesBeforeWhoIsBehindAfterIt) {
  // Gloo let rank 1 through all_reduce #9 with another shape; rank 0 still waits in it, so
  // rank 0 looks behind on #10. The part at #9 is the cause: both calls are named there.
  const auto ledger = ledgers(
      {coll(0, 8, "all_reduce", {1}, "t.py:60"), coll(0, 9, "all_reduce", {1, 4}, "t.py:60"),
       coll(1, 8, "all_reduce", {1}, "t.py:60"), coll(1, 9, "all_reduce", {2}, "t.py:60"),
       coll(1, 10, "all_reduce", {1}, "t.py:60")});
  std::vector<Stall> stalls = stalls_of({0, 1});
  attribute_stalls(stalls, {}, ledger);
  EXPECT_FALSE(stalls[0].behind);
  EXPECT_TRUE(stalls[0].desync);
  EXPECT_TRUE(stalls[1].desync);
  EXPECT_EQ(stalls[0].collective,
            "called all_reduce #9 of world (float32[1,4], t.py:60) where rank 1 called all_reduce "
            "#9 of world (float32[2], t.py:60): the ranks call different collectives at one index "
            "(desync)");
}

// A real Python process that registers faulthandler on SIGUSR2 and sleeps in its own function,
// asked for its stacks through the orchestrator's path.
TEST(RankStacks, ARealProcessIsAskedAndItsMainThreadRead) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bigmac-stacks-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path script = dir / "sleeper.py";
  const std::filesystem::path dump = dir / "rank0.stacks";
  std::ofstream(script) << "import faulthandler, signal, sys, threading, time\n"
                           "f = open(sys.argv[1], 'a')\n"
                           "faulthandler.register(signal.SIGUSR2, file=f, all_threads=True)\n"
                           "def load_batch():\n"
                           "    print(f'0x{threading.main_thread().ident:x}', flush=True)\n"
                           "    time.sleep(600)\n"
                           "load_batch()\n";
  std::array<int, 2> out{};
  ASSERT_EQ(pipe(out.data()), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string python = "/usr/bin/python3", script_arg = script.string(), dump_arg = dump.string();
  std::array<char*, 4> argv = {python.data(), script_arg.data(), dump_arg.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  // Ready once it printed its main thread's id: the handler is registered before that.
  std::string line;
  char c = 0;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  close(out[0]);

  StackTarget target;
  target.rank = 0;
  target.pid = pid;
  target.signal = SIGUSR2;
  target.path = dump;
  target.main_thread = line;
  target.library_dirs = {"/usr/lib/python3.11"};
  // It printed just before its sleep: asked at once it may still be on the print's line (5),
  // so it is asked until it is in the sleep (line 6), as it soon must be.
  std::vector<RankStack> stacks;
  for (int attempt = 0; attempt < 100; ++attempt) {
    stacks = request_stacks({{0, target}}, {pid}, std::chrono::milliseconds(10000));
    ASSERT_EQ(stacks.size(), 1u);
    ASSERT_EQ(stacks[0].unobservable, "");
    ASSERT_EQ(stacks[0].program_frame->function, "load_batch");
    if (stacks[0].program_frame->line == 6) break;
  }
  EXPECT_EQ(stacks[0].summary(), "at sleeper.py:6 in load_batch");
  EXPECT_FALSE(stacks[0].waits_on_others);

  // A pid that is not the run's is never signalled.
  const std::vector<RankStack> foreign =
      request_stacks({{0, target}}, {pid + 100000}, std::chrono::milliseconds(100));
  EXPECT_NE(foreign[0].unobservable.find("no longer a process of this run"), std::string::npos);

  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bigmac::launch
