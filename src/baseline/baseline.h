#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "logs/record.h"

namespace bigmac::baseline {

/// One optimizer step as a baseline stores it. Values a log did not carry stay empty.
struct BaselineStep {
  std::int64_t global_step = 0;
  std::optional<double> loss;
  std::optional<double> grad_norm;
  std::optional<double> lr;
  std::optional<std::int64_t> samples_per_step;
  /// The samples the step consumed over every rank that read input (logs::DigestRecord): how
  /// many, and the sum of their hashes. Empty when no rank logged them.
  std::optional<std::int64_t> sample_count{};
  std::optional<std::uint64_t> sample_digest{};
  /// Samples read again by the end of this step, counted from the first step (a sample read
  /// at an earlier step, or twice in this one): 0 while the run reads every sample once. Empty
  /// from the first step some reader logged no per-sample hashes for.
  std::optional<std::int64_t> sample_repeats{};
};

/// What the model and its input looked like (docs/architecture.md §4).
struct Structure {
  std::optional<std::int64_t> param_count;
  std::string param_digest;
  std::vector<std::int64_t> input_shape;
  std::string input_dtype;
  std::int64_t steps = 0;
};

/// Where the numbers came from: a different fingerprint explains drift.
struct Fingerprint {
  std::string tool_version;
  std::string torch_version;
  std::string python_version;  ///< Python trainers (the probe logs it); empty otherwise
  std::string backend;
  std::string device;  ///< device kind: `cpu`, `cuda` (the index is dropped)
  std::string dtype;
  std::optional<std::int64_t> seed;
  std::string config_digest;
  std::int64_t world_size = 0;  ///< ranks of the run; differing reduction order explains drift
};

/// What a baseline was made from beyond its logs, stored beside the fingerprint: the commit CI
/// built, the trainer it ran and every effective setting, so that a regression names the
/// commit it last passed at, whether the trainer changed and which settings moved. Empty in
/// files recorded before these were kept.
struct Recorded {
  std::string commit;          ///< GITHUB_SHA / CI_COMMIT_SHA at record time (ci_commit())
  std::string trainer_digest;  ///< trainer_digest() of the trainer binary or script
  std::map<std::string, std::string> config;  ///< the gate's effective inputs, key -> value
};

/// A stored reference run, or the same summary taken from any run's records for comparison.
struct Baseline {
  std::string name;
  Fingerprint fingerprint;
  Recorded recorded;
  Structure structure;
  std::vector<BaselineStep> steps;
};

/// The summary of a run's records: steps from the rank that owns the series (`loss_rank` when
/// it logged steps, else the lowest rank that did: step_series.h), structure from
/// `model`/`batch`, fingerprint from `run`. Never fails: missing parts stay empty.
Baseline summarize_records(const std::vector<logs::Record>& records, std::string name,
                           std::string config_digest, int loss_rank = 0);

/// Refuses a summary that must not become a baseline: no steps, steps out of order, a missing
/// or non-finite loss, grad_norm or lr on some steps and not others, a non-finite value. The
/// error names the step and the value; for a value a step lacks, its key is the metric.
Expected<void> check_recordable(const Baseline& baseline);

nlohmann::json to_json(const Baseline& baseline);
Expected<Baseline> baseline_from_json(const nlohmann::json& json, const std::string& path);

/// Reads a baseline file; errors name the file and the key.
Expected<Baseline> load_baseline(const std::filesystem::path& path);

/// Writes a baseline atomically (refusing what check_recordable refuses).
Expected<void> save_baseline(const std::filesystem::path& path, const Baseline& baseline);

/// A short content digest of a file (FNV-1a 64, hex), for invalidating gates that compared
/// against it. Empty when the file cannot be read.
std::string file_digest(const std::filesystem::path& path);

/// FNV-1a 64 of text, as 16 hex digits.
std::string text_digest(std::string_view text);

/// One digest over the contents of the files a trainer is made of (its binary, its script),
/// each named by its file name so that swapping two files changes it. Empty when none can be
/// read.
std::string trainer_digest(const std::vector<std::filesystem::path>& files);

/// The commit a CI job builds, from the first of GITHUB_SHA, CI_COMMIT_SHA (GitLab),
/// BUILDKITE_COMMIT, GIT_COMMIT (Jenkins) that is set; empty outside CI.
std::string ci_commit();

}  // namespace bigmac::baseline
