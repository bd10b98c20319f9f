// What the metric rules' tests build their records and runs from (metric_rules_test.cpp and
// metric_rules_layout_test.cpp): records of one rank, stalls and endings as the launcher
// reports them, and the rules run over them with the built-in catalog.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/metric_rules.h"

namespace bigmac::diagnose::metric_test {

inline const Catalog& catalog() {
  static const Catalog c = [] {
    auto loaded = builtin_catalog();
    EXPECT_TRUE(loaded) << loaded.error().format();
    return std::move(*loaded);
  }();
  return c;
}

inline logs::RecordOrigin at(int rank, std::int64_t line, double t = 0) { return {rank, line, t}; }

// Sets `metric` of the baseline's steps 0, 1, … to `values`, adding the steps it lacks.
inline void set_series(baseline::Baseline& b, baseline::Metric metric,
                       const std::vector<double>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i >= b.steps.size()) {
      b.steps.emplace_back();
      b.steps.back().global_step = static_cast<std::int64_t>(i);
    }
    baseline::BaselineStep& s = b.steps[i];
    switch (metric) {
      case baseline::Metric::kLoss:
        s.loss = values[i];
        break;
      case baseline::Metric::kGradNorm:
        s.grad_norm = values[i];
        break;
      case baseline::Metric::kLr:
        s.lr = values[i];
        break;
      case baseline::Metric::kSamplesPerStep:
        s.samples_per_step = static_cast<std::int64_t>(values[i]);
        break;
    }
  }
}

// The baseline's loss at `step`.
inline double loss_at(const baseline::Baseline& b, std::size_t step) {
  return *b.steps.at(step).loss;
}

// A stall as the watchdog lists it: the step the rank finished last, silent for `idle_s`.
inline launch::Stall stall(int rank, std::optional<std::int64_t> last_step, double idle_s) {
  launch::Stall s;
  s.rank = rank;
  s.before_rendezvous = !last_step;
  s.last_step = last_step;
  s.silent_for =
      std::chrono::duration_cast<launch::Clock::duration>(std::chrono::duration<double>(idle_s));
  return s;
}

// A rank's ending: an exit code, or the signal's name when one killed it.
inline launch::RankEnding ended(int rank, int exit_code, std::string signal, double duration_s) {
  launch::RankEnding e;
  e.known = true;
  e.rank = rank;
  if (signal.empty()) e.exit_code = exit_code;
  e.signal = std::move(signal);
  e.duration_s = duration_s;
  return e;
}

inline logs::StepRecord step(int rank, std::int64_t global_step, double loss,
                             double grad_norm = 1.0, double lr = 1e-3) {
  logs::StepRecord s;
  s.at = at(rank, global_step + 10);
  s.global_step = global_step;
  s.loss = loss;
  s.grad_norm = grad_norm;
  s.lr = lr;
  return s;
}

inline logs::LayoutRecord layout(int rank, int stage, int num_stages, int first, int last,
                                 std::int64_t params, std::int64_t duplicates = 0) {
  logs::LayoutRecord l;
  l.at = at(rank, 3);
  l.stage = stage;
  l.num_stages = num_stages;
  l.first_layer = first;
  l.last_layer = last;
  l.param_count = params;
  l.tied_duplicate_count = duplicates;
  return l;
}

inline logs::MicroBatchRecord mb(int rank, int stage, int index, char phase, double end) {
  logs::MicroBatchRecord m;
  m.at = at(rank, 100 + index, end);
  m.stage = stage;
  m.mb = index;
  m.phase = phase;
  m.start = end - 0.5;
  m.end = end;
  return m;
}

/// The records of one test log file.
struct LogRecords {
  std::string file;
  std::vector<logs::Record> records;
};

inline std::vector<logs::RankLog> rank_logs(const std::vector<LogRecords>& files) {
  std::vector<logs::RankLog> out;
  for (const LogRecords& f : files) out.push_back(logs::rank_log_of(f.file, f.records));
  return out;
}

inline std::vector<Diagnosis> run(std::vector<LogRecords> files,
                                  const baseline::Baseline* baseline = nullptr,
                                  const LaunchFacts* launch = nullptr,
                                  ConfiguredValues configured = {}) {
  const std::vector<logs::RankLog> logs = rank_logs(files);
  MetricInput input;
  input.logs = logs;
  input.baseline = baseline;
  input.launch = launch;
  input.configured = configured;
  return apply_metric_rules(catalog(), input);
}

inline const Diagnosis* find(const std::vector<Diagnosis>& all, std::string_view id) {
  for (const Diagnosis& d : all) {
    if (d.id == id) return &d;
  }
  return nullptr;
}
// A pointer into a temporary would dangle (AddressSanitizer caught one): name the vector first,
// or ask only whether a diagnosis is there.
inline const Diagnosis* find(std::vector<Diagnosis>&& all, std::string_view id) = delete;
inline bool names(const std::vector<Diagnosis>& all, std::string_view id) {
  return std::any_of(all.begin(), all.end(), [&](const Diagnosis& d) { return d.id == id; });
}

}  // namespace bigmac::diagnose::metric_test
