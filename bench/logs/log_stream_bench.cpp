// Throughput of LogStream on one core: in-memory logs of each format, and optionally files
// named by BIGMAC_BENCH_JSONL / BIGMAC_BENCH_MEGATRON (see compare_parsers.py).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "logs/field_bag.h"
#include "logs/json_line.h"
#include "logs/log_stream.h"
#include "logs/read_buffer.h"

namespace {

using bigmac::logs::LogFormat;
using bigmac::logs::LogStream;
using bigmac::logs::Record;

// Size of each in-memory log: 32 MiB, or BIGMAC_BENCH_MB.
const std::size_t kTarget = [] {
  const char* mb = std::getenv("BIGMAC_BENCH_MB");
  return static_cast<std::size_t>(mb != nullptr ? std::atoi(mb) : 32) << 20;
}();
constexpr std::size_t kChunk = std::size_t{1} << 20;  // fed as a file reader would

// One pipeline step as bigmac-train writes it on the loss-owning rank: micro-batch trace,
// per-micro-batch losses, heartbeat and the step line. Same mix as compare_parsers.py.
std::string bigmac_jsonl(bool key_value) {
  std::string log;
  double t = 1764412800.0;
  for (int step = 0; log.size() < kTarget; ++step) {
    for (int mb = 0; mb < 4; ++mb) {
      for (char phase : {'F', 'B'}) {
        t += 0.001;
        log += key_value
                   ? fmt::format(
                         "BIGMAC ev=mb rank=1 t={:.6f} global_step={} stage=1 mb={} "
                         "phase={} start={:.6f} end={:.6f}\n",
                         t, step, mb, phase, t - 0.0005, t)
                   : fmt::format(R"({{"ev":"mb","rank":1,"t":{:.6f},"global_step":{},"stage":1,)"
                                 R"("mb":{},"phase":"{}","start":{:.6f},"end":{:.6f}}})"
                                 "\n",
                                 t, step, mb, phase, t - 0.0005, t);
      }
      log += key_value ? fmt::format(
                             "BIGMAC ev=loss rank=1 t={:.6f} global_step={} stage=1 "
                             "mb={} value={:.6f}\n",
                             t, step, mb, 4.0 - step * 1e-4)
                       : fmt::format(R"({{"ev":"loss","rank":1,"t":{:.6f},"global_step":{},)"
                                     R"("stage":1,"mb":{},"value":{:.6f}}})"
                                     "\n",
                                     t, step, mb, 4.0 - step * 1e-4);
    }
    log += key_value ? fmt::format("BIGMAC ev=heartbeat rank=1 t={:.6f} global_step={}\n", t, step)
                     : fmt::format(R"({{"ev":"heartbeat","rank":1,"t":{:.6f},"global_step":{}}})"
                                   "\n",
                                   t, step);
    log += key_value ? fmt::format(
                           "BIGMAC ev=step rank=1 t={:.6f} global_step={} loss={:.6f} "
                           "grad_norm={:.6f} lr={:.8f} samples_per_step=8 step_ms={:.3f}\n",
                           t, step, 4.0 - step * 1e-4, 1.5, 6e-4, 12.5)
                     : fmt::format(R"({{"ev":"step","rank":1,"t":{:.6f},"global_step":{},)"
                                   R"("loss":{:.6f},"grad_norm":{:.6f},"lr":{:.8f},)"
                                   R"("samples_per_step":8,"step_ms":{:.3f}}})"
                                   "\n",
                                   t, step, 4.0 - step * 1e-4, 1.5, 6e-4, 12.5);
  }
  return log;
}

std::string megatron_log() {
  std::string log;
  for (int it = 1; log.size() < kTarget; ++it) {
    log += fmt::format(
        " [2024-05-01 12:{:02}:{:02}] iteration {:8d}/{:8d} | consumed samples: {:12d} | "
        "elapsed time per iteration (ms): {:.1f} | learning rate: {:.6E} | global batch size: "
        "{:5d} | lm loss: {:.6E} | loss scale: {:.1f} | grad norm: {:.3f} | number of skipped "
        "iterations: {:3d} | number of nan iterations: {:3d} |\n",
        (it / 60) % 60, it % 60, it, 1000000, it * 32, 1234.5, 1.5e-4, 32, 7.0 - it * 1e-6, 1.0,
        2.345, 0, 0);
  }
  return log;
}

std::string torchtitan_log() {
  std::string log;
  for (int step = 1; log.size() < kTarget; ++step) {
    log += fmt::format(
        "[titan] 2025-03-01 10:00:00,123 - root - INFO - \x1b[31mstep: {:2}  \x1b[32mloss: "
        "{:8.5f}  \x1b[33mgrad_norm: {:7.4f}  \x1b[36mmemory: {:5.2f}GiB({:.2f}%)  \x1b[34mtps: "
        "{}  \x1b[36mtflops: {:.2f}  \x1b[35mmfu: {:.2f}%\x1b[39m\n",
        step, 7.0 - step * 1e-5, 1.2345, 12.34, 15.6, "12,345", 56.78, 12.34);
  }
  return log;
}

// The Hugging Face Trainer's step dicts (python_dict_line.h).
std::string python_dict_log() {
  std::string log;
  for (int step = 1; log.size() < kTarget; ++step) {
    log += fmt::format("{{'loss': {:.4f}, 'grad_norm': {}, 'learning_rate': {}, 'epoch': {}}}\n",
                       4.0 - step * 1e-5, 1.4424070119857788, 4.929577464788733e-05, step * 0.001);
  }
  return log;
}

// nanoGPT's iteration lines (metric_line.h).
std::string plain_log() {
  std::string log;
  for (int iter = 0; log.size() < kTarget; ++iter) {
    log += fmt::format("iter {}: loss {:.4f}, time {:.2f}ms, mfu {:.2f}%\n", iter,
                       4.0 - iter * 1e-5, 140.06, 2.66);
  }
  return log;
}

void parse_buffer(benchmark::State& state, const std::string& log, LogFormat format) {
  std::vector<Record> out;
  std::int64_t records = 0;
  for (auto _ : state) {
    LogStream stream(format);
    for (std::size_t at = 0; at < log.size(); at += kChunk) {
      stream.feed(std::string_view(log).substr(at, kChunk), out);
      records += static_cast<std::int64_t>(out.size());
      out.clear();
    }
    stream.finish(out);
    out.clear();
    benchmark::DoNotOptimize(records);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(log.size()));
  state.counters["records"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}

void BM_BigmacJsonl(benchmark::State& state) {
  static const std::string log = bigmac_jsonl(false);
  parse_buffer(state, log, LogFormat::kAuto);
}
void BM_BigmacKeyValue(benchmark::State& state) {
  static const std::string log = bigmac_jsonl(true);
  parse_buffer(state, log, LogFormat::kAuto);
}
void BM_Megatron(benchmark::State& state) {
  static const std::string log = megatron_log();
  parse_buffer(state, log, LogFormat::kAuto);
}
void BM_Torchtitan(benchmark::State& state) {
  static const std::string log = torchtitan_log();
  parse_buffer(state, log, LogFormat::kAuto);
}
void BM_PythonDict(benchmark::State& state) {
  static const std::string log = python_dict_log();
  parse_buffer(state, log, LogFormat::kAuto);
}
void BM_Plain(benchmark::State& state) {
  static const std::string log = plain_log();
  parse_buffer(state, log, LogFormat::kAuto);
}
// The JSON line reader alone, each path on the same lines: the flat reader (falling back to
// simdjson where it defers) against simdjson On-Demand as Debian's package builds it.
void read_json_lines(benchmark::State& state, bigmac::logs::JsonLineReader::Path path) {
  static const std::string log = bigmac_jsonl(false);
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < log.size();) {
    std::size_t nl = log.find('\n', at);
    lines.emplace_back(log.data() + at, nl - at);
    at = nl + 1;
  }
  bigmac::logs::JsonLineReader reader(path);
  bigmac::logs::FieldBag bag;
  std::string error;
  std::int64_t read = 0;
  for (auto _ : state) {
    for (std::string_view line : lines) {
      // Readable to the end of the buffer, as LogStream passes it.
      read += reader.read(line, static_cast<std::size_t>(log.data() + log.size() - line.data()),
                          bag, error)
                  ? 1
                  : 0;
    }
    benchmark::DoNotOptimize(read);
  }
  if (read != static_cast<std::int64_t>(state.iterations() * lines.size())) {
    state.SkipWithError("a line was not read");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(log.size()));
}
void BM_JsonReaderFlat(benchmark::State& state) {
  read_json_lines(state, bigmac::logs::JsonLineReader::Path::kFlatFirst);
}
void BM_JsonReaderSimdjson(benchmark::State& state) {
  read_json_lines(state, bigmac::logs::JsonLineReader::Path::kSimdjsonOnly);
}

BENCHMARK(BM_BigmacJsonl)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonReaderFlat)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonReaderSimdjson)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BigmacKeyValue)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Megatron)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Torchtitan)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PythonDict)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Plain)->Unit(benchmark::kMillisecond);

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Streams a file from disk (page cache after the first pass) as `parse` does (load_logs).
void parse_file(benchmark::State& state, const std::string& path) {
  bigmac::logs::ReadBuffer buffer(kChunk);  // page-aligned, as load_logs reads
  std::vector<Record> out;
  std::int64_t bytes = 0;
  std::int64_t records = 0;
  for (auto _ : state) {
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
    if (!file) {
      state.SkipWithError(("cannot open " + path).c_str());
      return;
    }
    LogStream stream;
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
      stream.feed(std::string_view(buffer.data(), n), out);
      records += static_cast<std::int64_t>(out.size());
      out.clear();
    }
    stream.finish(out);
    out.clear();
    bytes += stream.stats().bytes;
  }
  state.SetBytesProcessed(bytes);
  state.counters["records"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* var : {"BIGMAC_BENCH_JSONL", "BIGMAC_BENCH_MEGATRON"}) {
    if (const char* path = std::getenv(var)) {
      std::string file = path;
      benchmark::RegisterBenchmark((std::string("BM_File/") + var).c_str(),
                                   [file](benchmark::State& state) { parse_file(state, file); })
          ->Unit(benchmark::kMillisecond)
          ->Iterations(3);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
