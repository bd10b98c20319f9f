// Launcher figures for the README, on real processes:
//  - BM_StallVerdict: time from a rank's last progress to the verdict "stalled", against the
//    configured stall timeout (target: within timeout + one poll interval).
//  - BM_SpawnToFirstByte: launcher overhead per rank for 1, 8 and 64 trivial ranks (spawn to the
//    first byte of output reaching the orchestrator), and the whole launch until all exited.
//  - BM_TorchrunLaunch: the same trivial ranks started through /usr/bin/torchrun, for comparison.
//  - BM_LiveIngestion: ranks that each write N MiB of valid JSON lines to their log file as fast
//    as they can, then 3 steps and `done`, under a 1 s stall limit: the orchestrator's live read
//    rate (all ranks' bytes over the launch's wall time, the writers sharing the 2 cores), and
//    whether the verdict was right (every step and done read, no stall) — it is an error if not.
// The rank program is bigmac-test-rank (built with the tests); override with BIGMAC_TEST_RANK.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <variant>

#include "launch/launch_planner.h"
#include "launch/plan_execution.h"
#include "proc/posix_process_runner.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string rank_program() {
  const char* env = std::getenv("BIGMAC_TEST_RANK");
  return env ? env : std::string(BIGMAC_BIN_DIR) + "/bigmac-test-rank";
}

fs::path scratch_dir() {
  fs::path dir = fs::temp_directory_path() / fmt::format("bigmac-launch-bench-{}", ::getpid());
  fs::create_directories(dir);
  return dir;
}

LaunchPlan make_plan(int ranks, std::vector<std::string> args, const std::string& launcher) {
  config::Config c;
  c.launch.nproc_per_node = ranks;
  c.launch.launcher = launcher;
  c.launch.master_port = 29000 + ::getpid() % 900;
  PlanInputs in;
  in.trainer_argv = {rank_program()};
  in.trainer_argv.insert(in.trainer_argv.end(), args.begin(), args.end());
  in.log_dir = scratch_dir();
  in.torchrun_program = "/usr/bin/torchrun";
  return *plan_launch(c, in);
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void BM_StallVerdict(benchmark::State& state) {
  const auto timeout = milliseconds(state.range(0));
  const auto poll = milliseconds(state.range(1));
  // Three steps, then silence: the verdict must come at the stall timeout.
  LaunchPlan plan = make_plan(1, {"train", "10", "hang-at", "3"}, "builtin");
  RunOptions options;
  options.limits = {std::chrono::seconds(60), timeout, true};
  options.poll_interval = poll;
  options.term_grace = milliseconds(1000);
  SteadyClock clock;
  double worst = 0;
  double total = 0;
  for (auto _ : state) {
    proc::PosixProcessRunner runner;
    RunResult result = execute_plan(plan, runner, clock, options);
    if (result.status != RunStatus::kStalled || result.stalls.empty()) {
      state.SkipWithError("run did not stall");
      return;
    }
    const double latency = ms(result.stalls.front().silent_for);
    state.SetIterationTime(latency / 1000.0);
    worst = std::max(worst, latency);
    total += latency;
  }
  state.counters["timeout_ms"] = static_cast<double>(timeout.count());
  state.counters["poll_ms"] = static_cast<double>(poll.count());
  state.counters["mean_verdict_ms"] = total / static_cast<double>(state.iterations());
  state.counters["max_overshoot_ms"] = worst - static_cast<double>(timeout.count());
}
BENCHMARK(BM_StallVerdict)
    ->Args({250, 100})
    ->Args({250, 1000})
    ->Args({1000, 200})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void run_trivial(benchmark::State& state, const std::string& launcher) {
  const int ranks = static_cast<int>(state.range(0));
  LaunchPlan plan = make_plan(ranks, {"exit", "0"}, launcher);
  RunOptions options;
  options.limits = {std::chrono::seconds(120), std::chrono::seconds(120), true};
  SteadyClock clock;
  double first_byte_sum = 0;
  double first_byte_max = 0;
  std::size_t samples = 0;
  for (auto _ : state) {
    proc::PosixProcessRunner runner;
    RunResult result = execute_plan(plan, runner, clock, options);
    if (result.status != RunStatus::kSucceeded) {
      state.SkipWithError(result.summary().c_str());
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(result.duration).count());
    for (const RankOutcome& r : result.ranks) {
      if (!r.first_output) continue;
      first_byte_sum += ms(*r.first_output);
      first_byte_max = std::max(first_byte_max, ms(*r.first_output));
      ++samples;
    }
  }
  state.counters["ranks"] = ranks;
  state.counters["first_byte_mean_ms"] =
      samples ? first_byte_sum / static_cast<double>(samples) : 0;
  state.counters["first_byte_max_ms"] = first_byte_max;
}

void BM_SpawnToFirstByte(benchmark::State& state) { run_trivial(state, "builtin"); }
BENCHMARK(BM_SpawnToFirstByte)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_TorchrunLaunch(benchmark::State& state) {
  if (!fs::exists("/usr/bin/torchrun")) {
    state.SkipWithError("no /usr/bin/torchrun");
    return;
  }
  run_trivial(state, "torchrun");
}
BENCHMARK(BM_TorchrunLaunch)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

void BM_LiveIngestion(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const long mib = state.range(1);
  LaunchPlan plan = make_plan(
      ranks, {"train", "3", "log-file", "{log_file}", "flood-mb", std::to_string(mib)}, "builtin");
  RunOptions options;
  options.limits = {std::chrono::seconds(60), milliseconds(1000), true};
  options.poll_interval = milliseconds(100);
  options.term_grace = milliseconds(1000);
  SteadyClock clock;
  double seconds = 0;
  std::size_t steps = 0, done = 0;
  for (auto _ : state) {
    for (const RankAssignment& r : plan.ranks) fs::remove(r.log_path);
    steps = done = 0;
    proc::PosixProcessRunner runner;
    RunResult result =
        execute_plan(plan, runner, clock, options, [&](const logs::Record& r, RecordSource) {
          if (std::holds_alternative<logs::StepRecord>(r)) ++steps;
          if (std::holds_alternative<logs::DoneRecord>(r)) ++done;
        });
    if (result.status != RunStatus::kSucceeded || steps != 3u * static_cast<std::size_t>(ranks) ||
        done != static_cast<std::size_t>(ranks)) {
      state.SkipWithError(
          fmt::format("wrong verdict: {}; {} steps, {} done read", result.summary(), steps, done)
              .c_str());
      return;
    }
    const double wall = std::chrono::duration<double>(result.duration).count();
    state.SetIterationTime(wall);
    seconds += wall;
  }
  const double bytes = static_cast<double>(ranks) * static_cast<double>(mib << 20) *
                       static_cast<double>(state.iterations());
  state.counters["MB_per_s"] = bytes / seconds / 1e6;
  state.counters["per_rank_MB_per_s"] = bytes / seconds / 1e6 / ranks;
}
BENCHMARK(BM_LiveIngestion)
    ->Args({1, 1024})
    ->Args({4, 256})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(3);

}  // namespace
}  // namespace bigmac::launch

BENCHMARK_MAIN();
