// Text signatures over a realistic log: mostly noise (progress, INFO, traceback frames) with a
// few real error lines from the test fixtures. Compares the catalog's single RE2::Set pass
// (TextMatcher) with the obvious alternatives: every pattern run on every line, as RE2s one by
// one and as std::regex (ECMAScript, named groups stripped). BM_TextScanJoined is the whole
// text scan diagnose runs: each line joined with its rank's earlier lines (wrapped messages),
// ranks interleaved, rank summary kept. BM_ReadManyRanks reads one file of one-line ranks, as
// many as a large job has: it must stay linear in the ranks (issue 30 item 15).

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "diagnose/catalog.h"
#include "diagnose/log_reading.h"
#include "diagnose/text_matcher.h"
#include "diagnose/text_scan.h"

namespace {

using bigmac::diagnose::Catalog;
using bigmac::diagnose::TextMatch;
using bigmac::diagnose::TextMatcher;

const Catalog& catalog() {
  static const Catalog c = *bigmac::diagnose::builtin_catalog();
  return c;
}

// Error lines: every line of the fixture logs that some signature matches.
std::vector<std::string> error_lines(const TextMatcher& matcher) {
  std::vector<std::string> out;
  std::vector<TextMatch> hits;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           BIGMAC_SOURCE_DIR "/tests/diagnose/fixtures")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      hits.clear();
      matcher.match(line, hits);
      if (!hits.empty()) out.push_back(line);
    }
  }
  return out;
}

// `count` lines, about 1 in 50 an error line, the rest the noise a training log is made of.
std::vector<std::string> corpus(std::size_t count) {
  static const TextMatcher matcher = *TextMatcher::build(catalog());
  const std::vector<std::string> errors = error_lines(matcher);
  std::mt19937 rng(7);
  std::vector<std::string> lines;
  lines.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (rng() % 50) {
      case 0:
        lines.push_back(errors[rng() % errors.size()]);
        break;
      case 1:
      case 2:
        lines.push_back(
            fmt::format("  File \"/usr/lib/python3/dist-packages/torch/nn/modules/module.py\", "
                        "line {}, in _call_impl",
                        rng() % 2000));
        break;
      case 3:
        lines.push_back(
            fmt::format("node0:{}:{} [{}] NCCL INFO Channel {:02}/02 :    0   1   2   3",
                        4000 + rng() % 8, 5000 + rng() % 8, rng() % 8, rng() % 2));
        break;
      default:
        lines.push_back(
            fmt::format("{} | INFO | trainer | step {:5} | loss {:.4f} | lr {:.2e} | grad_norm "
                        "{:.3f} | {} tok/s",
                        "2026-11-29 10:00:00,000", i, 4.0 / (1.0 + static_cast<double>(i) * 1e-3),
                        6e-4, 0.8 + static_cast<double>(rng() % 100) * 1e-3, 30000 + rng() % 5000));
    }
  }
  return lines;
}

std::size_t total_bytes(const std::vector<std::string>& lines) {
  std::size_t n = 0;
  for (const auto& l : lines) n += l.size() + 1;
  return n;
}

constexpr std::size_t kLines = 20000;

void BM_CatalogSetOnePass(benchmark::State& state) {
  const auto lines = corpus(kLines);
  const TextMatcher matcher = *TextMatcher::build(catalog());
  std::vector<TextMatch> hits;
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (const auto& line : lines) {
      hits.clear();
      matcher.match(line, hits);
      found += hits.size();
    }
    benchmark::DoNotOptimize(found);
  }
  state.counters["matches"] = static_cast<double>(found);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * lines.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * total_bytes(lines)));
}
BENCHMARK(BM_CatalogSetOnePass)->Unit(benchmark::kMillisecond);

void BM_EveryPatternRE2(benchmark::State& state) {
  const auto lines = corpus(kLines);
  std::vector<std::unique_ptr<RE2>> patterns;
  for (const auto& sig : catalog().signatures) {
    for (const auto& p : sig.patterns) patterns.push_back(std::make_unique<RE2>(p));
  }
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (const auto& line : lines) {
      for (const auto& re : patterns) found += RE2::PartialMatch(line, *re) ? 1 : 0;
    }
    benchmark::DoNotOptimize(found);
  }
  state.counters["matches"] = static_cast<double>(found);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * lines.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * total_bytes(lines)));
}
BENCHMARK(BM_EveryPatternRE2)->Unit(benchmark::kMillisecond);

void BM_EveryPatternStdRegex(benchmark::State& state) {
  const auto lines = corpus(kLines);
  std::vector<std::regex> patterns;
  const std::regex named(R"(\(\?P<\w+>)");
  for (const auto& sig : catalog().signatures) {
    for (const auto& p : sig.patterns) {
      // ECMAScript has no inline `(?i)`: it becomes the icase flag.
      const bool icase = p.rfind("(?i)", 0) == 0;
      const std::string body = std::regex_replace(icase ? p.substr(4) : p, named, "(");
      patterns.emplace_back(
          body, icase ? std::regex::ECMAScript | std::regex::icase : std::regex::ECMAScript);
    }
  }
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (const auto& line : lines) {
      for (const auto& re : patterns) found += std::regex_search(line, re) ? 1 : 0;
    }
    benchmark::DoNotOptimize(found);
  }
  state.counters["matches"] = static_cast<double>(found);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * lines.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * total_bytes(lines)));
}
BENCHMARK(BM_EveryPatternStdRegex)->Unit(benchmark::kMillisecond);

void BM_TextScanJoined(benchmark::State& state) {
  const auto lines = corpus(kLines);
  static const TextMatcher matcher = *TextMatcher::build(catalog());
  // The same lines as written by 8 interleaved ranks.
  std::vector<bigmac::logs::TextLine> text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    bigmac::logs::TextLine l;
    l.at = bigmac::logs::RecordOrigin{static_cast<int>(i % 8), static_cast<std::int64_t>(i + 1), 0};
    l.text = lines[i];
    text.push_back(std::move(l));
  }
  std::size_t found = 0;
  for (auto _ : state) {
    bigmac::diagnose::TextScan scan(matcher);
    scan.begin_file("bench.log");
    for (const auto& l : text) scan.add_line(l);
    found = scan.finish().size();
    benchmark::DoNotOptimize(found);
  }
  state.counters["diagnoses"] = static_cast<double>(found);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * lines.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * total_bytes(lines)));
}
BENCHMARK(BM_TextScanJoined)->Unit(benchmark::kMillisecond);

void BM_ReadManyRanks(benchmark::State& state) {
  const auto ranks = static_cast<int>(state.range(0));
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / fmt::format("bigmac-bench-ranks-{}.log", ::getpid());
  {
    std::ofstream out(file);
    for (int r = 0; r < ranks; ++r) {
      out << fmt::format("{{\"ev\": \"run\", \"rank\": {}, \"world_size\": {}}}\n", r, ranks);
    }
  }
  std::size_t read = 0;
  for (auto _ : state) {
    read = bigmac::diagnose::read_log_records(file)->size();
    benchmark::DoNotOptimize(read);
  }
  std::filesystem::remove(file);
  state.counters["ranks"] = static_cast<double>(read);
  state.SetComplexityN(ranks);
}
BENCHMARK(BM_ReadManyRanks)
    ->RangeMultiplier(4)
    ->Range(1 << 12, 1 << 18)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

}  // namespace

BENCHMARK_MAIN();
