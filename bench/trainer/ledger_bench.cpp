// What bigmac-train's collective ledger costs per entry (src/trainer/collective_ledger.h): one
// `coll` line built and written to a log file, flushed per line as the trainer's LogWriter
// does. The trainer writes one before each collective and point-to-point transfer; a step's
// share is this cost times its collectives over its time (docs/benchmarks.md).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "trainer/collective_ledger.h"
#include "trainer/log_writer.h"

namespace {

using bigmac::trainer::CollectiveLedger;
using bigmac::trainer::LogWriter;

// A fresh file under the temporary folder, removed when the benchmark ends.
class TempLog {
 public:
  TempLog()
      : path_(std::filesystem::temp_directory_path() /
              ("bigmac-ledger-bench-" + std::to_string(::getpid()) + ".jsonl")) {}
  ~TempLog() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The log the ledger writes to, or none (the benchmark then says why and is skipped).
std::optional<LogWriter> open_log(benchmark::State& state, const TempLog& file, int rank) {
  auto log = LogWriter::open(file.path(), rank);
  if (!log) {
    state.SkipWithError(log.error().message.c_str());
    return std::nullopt;
  }
  return std::move(*log);
}

// An all-reduce of a gradient bucket on the world group, as the trainer's data-parallel step
// records it.
void BM_LedgerAllReduce(benchmark::State& state) {
  TempLog file;
  auto log = open_log(state, file, 1);
  if (!log) return;
  CollectiveLedger ledger(*log, 1);
  const std::vector<std::int64_t> shape{4096, 1024};
  std::int64_t step = 0;
  for (auto _ : state) {
    ledger.set_step(static_cast<int>(step++ / 8));
    ledger.record("all_reduce", "world", shape, "float32", std::source_location::current());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LedgerAllReduce);

// A pipeline transfer on its channel: the trainer's key for the pair of ranks.
void BM_LedgerSend(benchmark::State& state) {
  TempLog file;
  auto log = open_log(state, file, 0);
  if (!log) return;
  CollectiveLedger ledger(*log, 0);
  const std::vector<std::int64_t> shape{4, 64, 256};
  for (auto _ : state) {
    ledger.record("send", bigmac::trainer::channel_key(0, 1), shape, "float32",
                  std::source_location::current());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LedgerSend);

}  // namespace

BENCHMARK_MAIN();
