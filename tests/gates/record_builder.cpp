#include "record_builder.h"

#include <cstdlib>
#include <iostream>

#include "config/config.h"
#include "gates/pipeline_checks.h"

namespace bigmac::gates::testing {

std::vector<logs::Record> healthy_rank(int rank, int world, int steps, bool owns_steps,
                                       std::int64_t micro, std::int64_t accum, std::int64_t dp) {
  std::vector<logs::Record> out;
  std::int64_t line = 0;
  logs::RunRecord run;
  run.at = at(rank, ++line, 100);
  run.world_size = world;
  run.local_rank = rank;
  run.device = "cpu";
  run.backend = world > 1 ? "gloo" : "none";
  run.dtype = "float32";
  run.seed = 1234;
  run.torch_version = "1.13.1";
  run.tool_version = "0.1.0";
  out.emplace_back(run);
  if (world > 1)
    out.emplace_back(logs::PgReadyRecord{at(rank, ++line, 100.5), 12.0, world, "gloo"});
  logs::BatchRecord batch;
  batch.at = at(rank, ++line, 101);
  batch.micro_batch_size = micro;
  batch.grad_accum = accum;
  batch.dp = dp;
  batch.samples_per_step = micro * accum * dp;
  batch.seq_length = 32;
  batch.input_shape = {micro, 32};
  batch.input_dtype = "int64";
  out.emplace_back(batch);
  out.emplace_back(logs::ModelRecord{at(rank, ++line, 101), 1000, "feedbeef", {}, {}});
  logs::LayoutRecord layout;
  layout.at = at(rank, ++line, 101);
  layout.num_stages = 1;
  layout.first_layer = 0;
  layout.last_layer = 3;
  layout.dp_rank = rank;
  layout.dp_size = world;
  layout.param_count = 1000;
  out.emplace_back(layout);
  for (int i = 0; i < steps; ++i) {
    const double t = 102 + i;
    out.emplace_back(logs::HeartbeatRecord{at(rank, ++line, t), i, ""});
    if (!owns_steps) continue;
    logs::StepRecord s;
    s.at = at(rank, ++line, t + 0.5);
    s.global_step = i;
    s.loss = 4.0 - 0.1 * i;
    s.grad_norm = 1.0 - 0.01 * i;
    s.lr = 1e-3;
    s.samples_per_step = micro * accum * dp;
    s.step_ms = 10;
    out.emplace_back(s);
  }
  if (rank == 0)
    out.emplace_back(
        logs::CheckpointRecord{at(rank, ++line, 102.0 + steps), steps - 1, "ckpt.bin"});
  out.emplace_back(
      logs::DigestRecord{at(rank, ++line, 102.0 + steps), "cafe", steps - 1, {}, {}, {}, {}, {}});
  out.emplace_back(logs::DoneRecord{at(rank, ++line, 102.0 + steps), steps});
  return out;
}

config::Config default_config() {
  auto c = config::load_config(config::ConfigSources{});
  if (!c) {
    std::cerr << "default config does not load\n";
    std::abort();
  }
  return *c;
}

const std::vector<GateSpec>& real_specs() {
  static const std::vector<GateSpec> specs = [] {
    auto s = load_gate_specs(std::string(BIGMAC_SOURCE_DIR) + "/stages");
    if (!s) {
      for (const Error& e : s.error()) std::cerr << e.format() << "\n";
      std::abort();
    }
    return *s;
  }();
  return specs;
}

const GateSpec& spec(const std::string& id) {
  const GateSpec* s = find_gate(real_specs(), id);
  if (!s) std::abort();
  return *s;
}

GatePlan plan(const std::string& id, int max_steps) {
  config::Config c = default_config();
  c.train.max_steps = max_steps;
  auto p = plan_gate(spec(id), c);
  if (!p) {
    std::cerr << p.error().format() << "\n";
    std::abort();
  }
  return *p;
}

GateEvidence single_evidence(int steps) {
  GateEvidence e;
  e.add_rank(0, healthy_rank(0, 1, steps, true), clean_exit());
  return e;
}

GateEvidence pipeline_evidence(int stages, int micro_batches, int steps,
                               const std::string& schedule, int seq) {
  GateEvidence e;
  const int layers_per_stage = 4 / stages;
  for (int stage = 0; stage < stages; ++stage) {
    std::vector<logs::Record> records =
        healthy_rank(stage, stages, steps, stage == stages - 1, 2, micro_batches, 1);
    std::int64_t line = 100;
    for (auto& r : records) {
      if (auto* l = std::get_if<logs::LayoutRecord>(&r)) {
        l->stage = stage;
        l->num_stages = stages;
        l->first_layer = stage * layers_per_stage;
        l->last_layer = (stage + 1) * layers_per_stage - 1;
        l->dp_rank = 0;
        l->dp_size = 1;
        // The model's 1000 parameters plus 100 tied embedding weights held by both ends.
        l->param_count = stages == 1 ? 1000 : (stage == 0 ? 1100 - 200 * (stages - 1) : 200);
        if (stage == stages - 1 && stages > 1) {
          l->tied = {"embedding.weight"};
          l->tied_duplicate_count = 100;
        }
      }
    }
    for (int step = 0; step < steps; ++step) {
      double t = 102 + step;
      for (const auto& [phase, mb] : schedule_sequence(schedule, stage, stages, micro_batches)) {
        records.emplace_back(
            logs::MicroBatchRecord{at(stage, ++line, t), step, stage, mb, phase, t, t + 0.01});
        t += 0.02;
        if (phase != 'F') continue;
        const std::vector<std::int64_t> hidden{2, seq, 64};
        if (stage > 0)
          records.emplace_back(logs::ShapeRecord{at(stage, ++line), step, stage, mb, "enter",
                                                 "hidden_states", hidden, "float32", "cpu"});
        if (stage < stages - 1)
          records.emplace_back(logs::ShapeRecord{at(stage, ++line), step, stage, mb, "exit",
                                                 "hidden_states", hidden, "float32", "cpu"});
        if (stage == stages - 1) {
          records.emplace_back(logs::ShapeRecord{at(stage, ++line),
                                                 step,
                                                 stage,
                                                 mb,
                                                 "exit",
                                                 "logits",
                                                 {2, seq, 64},
                                                 "float32",
                                                 "cpu"});
          records.emplace_back(logs::ShapeRecord{
              at(stage, ++line), step, stage, mb, "labels", "labels", {2, seq}, "int64", "cpu"});
          records.emplace_back(
              logs::LossRecord{at(stage, ++line), step, stage, mb, 4.0 - 0.1 * step});
        }
      }
    }
    e.add_rank(stage, records, clean_exit());
  }
  return e;
}

}  // namespace bigmac::gates::testing
