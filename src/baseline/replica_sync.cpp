#include "baseline/replica_sync.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

namespace bigmac::baseline {
namespace {

enum class Wanted { kEqual, kDistinct };

template <class Get>
ReplicaScan scan(const std::vector<const logs::RankLog*>& replicas, Get get, Wanted wanted) {
  // step -> every replica's digest at it, in rank order
  std::map<std::int64_t, std::vector<RankDigest>> by_step;
  for (const logs::RankLog* log : replicas) {
    for (const logs::RankLog::StepDigests& d : log->step_digests) {
      if (const std::optional<std::uint64_t> v = get(d)) {
        by_step[d.step].push_back(RankDigest{log->rank, *v, d.at});
      }
    }
  }
  ReplicaScan out;
  for (const auto& [step, digests] : by_step) {
    if (digests.size() < 2) continue;
    ++out.steps_compared;
    for (std::size_t i = 1; i < digests.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        const bool equal = digests[i].digest == digests[j].digest;
        if (equal == (wanted == Wanted::kEqual)) continue;
        if (wanted == Wanted::kEqual && j > 0) continue;  // against the first replica only
        out.first = ReplicaPair{step, digests[j], digests[i]};
        return out;
      }
    }
  }
  return out;
}

}  // namespace

ReplicaScan scan_params_in_sync(const std::vector<const logs::RankLog*>& replicas) {
  return scan(
      replicas, [](const logs::RankLog::StepDigests& d) { return d.param; }, Wanted::kEqual);
}

ReplicaScan scan_buffers_in_sync(const std::vector<const logs::RankLog*>& replicas) {
  return scan(
      replicas, [](const logs::RankLog::StepDigests& d) { return d.buffers; }, Wanted::kEqual);
}

ReplicaScan scan_duplicate_inputs(const std::vector<const logs::RankLog*>& replicas) {
  return scan(
      replicas, [](const logs::RankLog::StepDigests& d) { return d.input; }, Wanted::kDistinct);
}

namespace {

std::string batch_dim_mismatch(const std::vector<std::int64_t>& baseline_shape,
                               const std::vector<const logs::RankLog*>& readers) {
  if (baseline_shape.empty()) return {};
  const std::vector<std::int64_t> row(baseline_shape.begin() + 1, baseline_shape.end());
  for (const logs::RankLog* log : readers) {
    if (log->batches.empty() || log->batches.front().input_shape.empty()) continue;
    const std::vector<std::int64_t>& shape = log->batches.front().input_shape;
    if (std::vector<std::int64_t>(shape.begin() + 1, shape.end()) != row) {
      return fmt::format(
          "rank {}'s input is {}, the baseline's {}: beyond the first dimension they differ, so "
          "that dimension is not the batch and its rows are not samples",
          log->rank, fmt::join(shape, "x"), fmt::join(baseline_shape, "x"));
    }
  }
  return {};
}

bool logs_sample_sets(const std::vector<const logs::RankLog*>& ranks) {
  for (const logs::RankLog* log : ranks) {
    for (const logs::RankLog::StepDigests& d : log->step_digests) {
      if (d.sample_count && d.sample_digest) return true;
    }
  }
  return false;
}

std::vector<StepSamples> step_samples(const std::vector<const logs::RankLog*>& readers) {
  std::map<std::int64_t, StepSamples> by_step;
  std::map<std::int64_t, std::size_t> readers_at;
  for (const logs::RankLog* log : readers) {
    std::set<std::int64_t> counted;  // a step this rank logged twice counts once
    for (const logs::RankLog::StepDigests& d : log->step_digests) {
      if (!d.sample_count || !d.sample_digest || !counted.insert(d.step).second) continue;
      StepSamples& s = by_step[d.step];
      if (s.per_rank.empty()) {
        s.step = d.step;
        s.at = d.at;
      }
      s.count += *d.sample_count;
      s.digest += *d.sample_digest;
      s.per_rank.emplace_back(log->rank, *d.sample_count);
      ++readers_at[d.step];
    }
  }
  std::vector<StepSamples> out;
  for (auto& [step, s] : by_step) {
    if (readers_at[step] == readers.size()) out.push_back(std::move(s));
  }
  return out;
}

void compare_samples(const std::vector<StepSamples>& run, const std::vector<BaselineStep>& baseline,
                     SampleCoverage& out) {
  std::map<std::int64_t, const BaselineStep*> base;
  for (const BaselineStep& s : baseline) {
    if (s.sample_count && s.sample_digest) base[s.global_step] = &s;
  }
  for (const StepSamples& s : run) {
    const auto it = base.find(s.step);
    if (it == base.end()) continue;
    ++out.steps_compared;
    if (s.count != *it->second->sample_count) {
      out.count_differs = s;
      out.baseline_count = *it->second->sample_count;
      return;
    }
    if (s.digest != *it->second->sample_digest && out.first_other_samples < 0) {
      out.first_other_samples = s.step;
    }
  }
}

// Over the steps both the baseline (read every sample once so far) and every reader (each
// sample's hash) can say it, from the first, in order: which samples the readers read again.
void count_repeats(const std::vector<const logs::RankLog*>& readers,
                   const std::vector<BaselineStep>& baseline, SampleCoverage& out) {
  out.repeats_allowed = static_cast<std::int64_t>(readers.size()) - 1;
  // step -> each reader's digests at it
  std::map<std::int64_t, std::vector<std::pair<int, const logs::RankLog::StepDigests*>>> by_step;
  for (const logs::RankLog* log : readers) {
    std::set<std::int64_t> counted;
    for (const logs::RankLog::StepDigests& d : log->step_digests) {
      if (d.sample_count && counted.insert(d.step).second) {
        by_step[d.step].emplace_back(log->rank, &d);
      }
    }
  }
  std::map<std::uint64_t, SampleRead> seen;
  for (const BaselineStep& base : baseline) {
    if (!base.sample_repeats || *base.sample_repeats != 0) return;
    const auto it = by_step.find(base.global_step);
    if (it == by_step.end() || it->second.size() != readers.size()) return;
    for (const auto& [rank, d] : it->second) {
      if (static_cast<std::int64_t>(d->sample_hashes.size()) != *d->sample_count) return;
    }
    ++out.repeat_steps;
    for (const auto& [rank, d] : it->second) {
      for (const std::uint64_t hash : d->sample_hashes) {
        ++out.repeat_reads;
        const SampleRead read{rank, base.global_step, d->at};
        const auto [where, fresh] = seen.try_emplace(hash, read);
        if (fresh) continue;
        ++out.repeats;
        if (!out.first_repeat) out.first_repeat = RepeatedSample{hash, where->second, read};
      }
    }
  }
}

}  // namespace

SampleCoverage cover_samples(const std::vector<const logs::RankLog*>& readers,
                             const std::vector<BaselineStep>& baseline_steps,
                             const std::vector<std::int64_t>& baseline_shape) {
  SampleCoverage out;
  out.not_comparable = batch_dim_mismatch(baseline_shape, readers);
  if (!out.not_comparable.empty()) return out;
  out.logged = logs_sample_sets(readers);
  const std::vector<StepSamples> run = step_samples(readers);
  out.steps_logged = static_cast<std::int64_t>(run.size());
  compare_samples(run, baseline_steps, out);
  if (!out.count_differs) count_repeats(readers, baseline_steps, out);
  return out;
}

}  // namespace bigmac::baseline
