// Gate evaluation beside log reading, on the same generated data-parallel run: 4 ranks in
// bigmac-log v1, each with run/pg_ready/batch/model/layout, a heartbeat per step, and rank 0's
// step events. Reported per run, so the ratio evaluate / parse says what the checks add.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "baseline/baseline.h"
#include "gates/gate_catalog.h"
#include "gates/gate_verdict.h"
#include "logs/rank_log.h"

namespace {

using namespace bigmac;

std::string rank_text(int rank, int steps) {
  std::string out = fmt::format(
      "{{\"ev\":\"run\",\"rank\":{0},\"t\":1.0,\"world_size\":4,\"local_rank\":{0},\"device\":"
      "\"cpu\","
      "\"backend\":\"gloo\",\"dtype\":\"float32\",\"seed\":1234,\"torch_version\":\"1.13.0\","
      "\"pid\":{0},\"tool_version\":\"0.1.0\"}}\n"
      "{{\"ev\":\"pg_ready\",\"rank\":{0},\"t\":1.1,\"init_ms\":100,\"world_size\":4,\"backend\":"
      "\"gloo\"}}\n"
      "{{\"ev\":\"batch\",\"rank\":{0},\"t\":1.2,\"micro_batch_size\":2,\"grad_accum\":1,\"dp\":4,"
      "\"samples_per_step\":8,\"seq_length\":32,\"input_shape\":[2,32],\"input_dtype\":\"int64\"}}"
      "\n"
      "{{\"ev\":\"model\",\"rank\":{0},\"t\":1.2,\"param_count\":206208,\"param_digest\":\"9e80\"}}"
      "\n"
      "{{\"ev\":\"layout\",\"rank\":{0},\"t\":1.2,\"stage\":0,\"num_stages\":1,\"first_layer\":0,"
      "\"last_layer\":3,\"dp_rank\":{0},\"dp_size\":4,\"param_count\":206208,\"tied\":[],"
      "\"tied_duplicate_count\":0}}\n",
      rank);
  for (int i = 0; i < steps; ++i) {
    out += fmt::format("{{\"ev\":\"heartbeat\",\"rank\":{},\"t\":{},\"global_step\":{}}}\n", rank,
                       2.0 + i, i);
    if (rank != 0) continue;
    out += fmt::format(
        "{{\"ev\":\"step\",\"rank\":0,\"t\":{},\"global_step\":{},\"loss\":{},\"grad_norm\":{},"
        "\"lr\":0.0006,\"samples_per_step\":8,\"step_ms\":14.2}}\n",
        2.5 + i, i, 4.0 - 1e-4 * i, 1.0 + 1e-5 * i);
  }
  return out + fmt::format("{{\"ev\":\"done\",\"rank\":{},\"t\":9e9,\"steps\":{}}}\n", rank, steps);
}

struct DpRun {
  std::vector<std::string> texts;
  gates::GateEvidence evidence;
  baseline::Baseline reference;
  gates::GateSpec spec;
  gates::GatePlan plan;
};

const DpRun& dp_run(int steps) {
  static std::map<int, DpRun> cache;
  auto [it, fresh] = cache.try_emplace(steps);
  DpRun& run = it->second;
  if (!fresh) return run;
  auto config = config::load_config({});
  config->train.max_steps = steps;
  auto catalog = gates::GateCatalog::load(std::string(BIGMAC_SOURCE_DIR) + "/stages", *config);
  run.spec = *catalog->find("dp");
  run.plan = *gates::plan_gate(run.spec, *config);
  for (int r = 0; r < 4; ++r) {
    run.texts.push_back(rank_text(r, steps));
    const logs::LoadedLogs loaded = logs::load_text(run.texts.back(), fmt::format("rank{}", r));
    run.evidence.add_rank_log(loaded.ranks.front(), gates::RankEnding{true, 0, {}, false, {}});
  }
  run.reference = baseline::summarize_records(run.evidence.all_records(), "ref", {});
  return run;
}

void BM_ParseLogs(benchmark::State& state) {
  const DpRun& run = dp_run(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    for (std::size_t r = 0; r < run.texts.size(); ++r) {
      logs::LoadedLogs loaded = logs::load_text(run.texts[r], "rank");
      benchmark::DoNotOptimize(loaded);
      bytes += run.texts[r].size();
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}

void BM_EvaluateDpGate(benchmark::State& state) {
  const DpRun& run = dp_run(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    gates::GateVerdict verdict =
        gates::evaluate_gate(run.spec, run.plan, run.evidence, &run.reference);
    if (!verdict.passed) state.SkipWithError(verdict.summary().c_str());
    benchmark::DoNotOptimize(verdict);
  }
}

BENCHMARK(BM_ParseLogs)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK(BM_EvaluateDpGate)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
