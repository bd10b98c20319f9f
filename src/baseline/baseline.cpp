#include "baseline/baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <type_traits>

#include "baseline/step_series.h"
#include "core/atomic_file.h"
#include "core/json_file.h"

namespace bigmac::baseline {
namespace {

constexpr const char* kFormat = "bigmac-baseline/1";

std::string device_kind(const std::string& device) {
  const auto colon = device.find(':');
  return colon == std::string::npos ? device : device.substr(0, colon);
}

template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

Error input_error(const std::string& path, const std::string& key, std::string message) {
  Error e = make_error(ErrorKind::kInput, std::move(message));
  e.file = path;
  e.key = key;
  return e;
}

// Reads an optional field of the expected JSON type; a wrong type is an error naming the key.
template <class T>
Expected<std::optional<T>> optional_field(const nlohmann::json& obj, const std::string& key,
                                          const std::string& where, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<T>{};
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string())
      return tl::unexpected(input_error(path, where + key, "expected a string"));
  } else if constexpr (std::is_integral_v<T>) {
    const auto value = json_integer(*it);
    if (!value) {
      return tl::unexpected(input_error(
          path, where + key,
          fmt::format("expected an integer, found {}", it->is_number_unsigned()
                                                           ? it->dump() + " (too large)"
                                                           : std::string(json_type_name(*it)))));
    }
    return std::optional<T>(*value);
  } else {
    if (!it->is_number())
      return tl::unexpected(input_error(path, where + key, "expected a number"));
  }
  return std::optional<T>(it->get<T>());
}

}  // namespace

Baseline summarize_records(const std::vector<logs::Record>& records, std::string name,
                           std::string config_digest, int loss_rank) {
  Baseline b;
  b.name = std::move(name);
  b.fingerprint.config_digest = std::move(config_digest);
  std::optional<int> step_rank;  // the rank that owns the series (step_series.h)
  for (const logs::Record& record : records) {
    if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
      if (!step_rank || owns_series_before(step->at.rank, *step_rank, loss_rank)) {
        step_rank = step->at.rank;
      }
    }
  }
  // step -> the samples the ranks that read input consumed in it, summed (sets add up): the
  // ranks of the first pipeline stage (all when no layout is logged), one set per rank and step
  // (a trainer's digest event, else the probe's step event).
  std::set<int> later_stages;
  for (const logs::Record& record : records) {
    if (const auto* layout = std::get_if<logs::LayoutRecord>(&record)) {
      if (layout->stage > 0) later_stages.insert(layout->at.rank);
    }
  }
  struct RankSet {
    std::int64_t count = 0;
    std::uint64_t digest = 0;
    const std::vector<std::uint64_t>* hashes = nullptr;
  };
  std::map<std::pair<int, std::int64_t>, RankSet> per_rank;
  auto note = [&](int rank, std::int64_t step, const std::optional<std::int64_t>& count,
                  const std::optional<std::uint64_t>& digest,
                  const std::vector<std::uint64_t>& hashes) {
    if (count && digest && !later_stages.contains(rank)) {
      const bool whole = static_cast<std::int64_t>(hashes.size()) == *count;
      per_rank.try_emplace({rank, step}, RankSet{*count, *digest, whole ? &hashes : nullptr});
    }
  };
  for (const logs::Record& record : records) {
    if (const auto* d = std::get_if<logs::DigestRecord>(&record)) {
      note(d->at.rank, d->global_step, d->sample_count, d->sample_digest, d->sample_hashes);
    }
  }
  for (const logs::Record& record : records) {
    if (const auto* s = std::get_if<logs::StepRecord>(&record)) {
      note(s->at.rank, s->global_step, s->sample_count, s->sample_digest, s->sample_hashes);
    }
  }
  struct StepSet {
    std::int64_t count = 0;
    std::uint64_t sum = 0;
    std::optional<std::int64_t> repeats;
  };
  std::map<std::int64_t, StepSet> samples;
  for (const auto& [at, set] : per_rank) {
    StepSet& s = samples[at.second];
    s.count += set.count;
    s.sum += set.digest;
  }
  // Samples read again, step by step, while every reader's hashes are there (a map: in order).
  std::set<std::uint64_t> seen;
  std::int64_t repeats = 0;
  for (auto& [step, set] : samples) {
    bool whole = true;
    for (const auto& [at, rank_set] : per_rank) {
      if (at.second == step && rank_set.hashes == nullptr) whole = false;
    }
    if (!whole) break;
    for (const auto& [at, rank_set] : per_rank) {
      if (at.second != step) continue;
      for (const std::uint64_t h : *rank_set.hashes) repeats += seen.insert(h).second ? 0 : 1;
    }
    set.repeats = repeats;
  }
  for (const logs::Record& record : records) {
    if (const auto* run = std::get_if<logs::RunRecord>(&record)) {
      if (!b.fingerprint.torch_version.empty()) continue;
      b.fingerprint.tool_version = run->tool_version;
      b.fingerprint.torch_version = run->torch_version;
      b.fingerprint.python_version = run->python_version;
      b.fingerprint.backend = run->backend;
      b.fingerprint.device = device_kind(run->device);
      b.fingerprint.dtype = run->dtype;
      b.fingerprint.seed = run->seed;
      b.fingerprint.world_size = run->world_size;
    } else if (const auto* batch = std::get_if<logs::BatchRecord>(&record)) {
      if (b.structure.input_shape.empty()) {
        b.structure.input_shape = batch->input_shape;
        b.structure.input_dtype = batch->input_dtype;
      }
    } else if (const auto* model = std::get_if<logs::ModelRecord>(&record)) {
      if (!b.structure.param_count) {
        b.structure.param_count = model->param_count;
        b.structure.param_digest = model->param_digest;
      }
    } else if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
      if (step->at.rank != step_rank) continue;
      BaselineStep out{step->global_step,
                       step->loss,
                       step->grad_norm,
                       step->lr,
                       step->samples_per_step,
                       {},
                       {},
                       {}};
      if (const auto it = samples.find(step->global_step); it != samples.end()) {
        out.sample_count = it->second.count;
        out.sample_digest = it->second.sum;
        out.sample_repeats = it->second.repeats;
      }
      b.steps.push_back(out);
    }
  }
  b.structure.steps = static_cast<std::int64_t>(b.steps.size());
  return b;
}

namespace {

struct PartlyLogged {
  std::size_t index = 0;  ///< the first step without it
  const char* metric = "";
};

// grad_norm or lr on some steps and not on others: a trainer that logs a metric logs it every
// step, so a gap is a damaged log, not a metric it does not log (which is allowed: the later
// gates then cannot compare it, and say so).
std::optional<PartlyLogged> partly_logged(const Baseline& b) {
  for (const char* metric : {"grad_norm", "lr"}) {
    const std::string_view m = metric;
    auto value = [&](const BaselineStep& s) { return m == "lr" ? s.lr : s.grad_norm; };
    const bool any = std::any_of(b.steps.begin(), b.steps.end(),
                                 [&](const BaselineStep& s) { return value(s).has_value(); });
    if (!any) continue;
    for (std::size_t i = 0; i < b.steps.size(); ++i) {
      if (!value(b.steps[i])) return PartlyLogged{i, metric};
    }
  }
  return std::nullopt;
}

}  // namespace

Expected<void> check_recordable(const Baseline& b) {
  auto refuse = [&](std::string message, std::string hint = {},
                    std::string metric = {}) -> Expected<void> {
    Error e =
        make_error(ErrorKind::kInput, fmt::format("baseline '{}': {}", b.name, std::move(message)),
                   std::move(hint));
    e.key = std::move(metric);  // the metric a step lacks, so a caller can say what to log
    return tl::unexpected(std::move(e));
  };
  if (b.steps.empty()) return refuse("no step records to record", "was the gate's log empty?");
  for (std::size_t i = 0; i < b.steps.size(); ++i) {
    const std::int64_t step = b.steps[i].global_step;
    if (step < 0) return refuse(fmt::format("step {} is negative", step));
    if (i > 0 && step <= b.steps[i - 1].global_step) {
      return refuse(
          fmt::format("step {} logged after step {}: a baseline holds each step once, "
                      "in order",
                      step, b.steps[i - 1].global_step));
    }
  }
  // No param_count (no `model` event) is no refusal: the later gates' param_count check is then
  // unobservable, while every per-step comparison can still be made.
  if (auto partial = partly_logged(b); partial) {
    return refuse(fmt::format("step {} has no {} while other steps have one",
                              b.steps[partial->index].global_step, partial->metric),
                  {}, partial->metric);
  }
  for (const BaselineStep& s : b.steps) {
    if (!s.loss) return refuse(fmt::format("step {} has no loss", s.global_step), {}, "loss");
    const std::pair<const char*, const std::optional<double>*> values[] = {
        {"loss", &s.loss}, {"grad_norm", &s.grad_norm}, {"lr", &s.lr}};
    for (const auto& [metric, value] : values) {
      if (!*value) continue;  // grad_norm or lr on no step: the later gates cannot compare it
      if (!std::isfinite(**value)) {
        return refuse(fmt::format("step {} has non-finite {} = {}", s.global_step, metric, **value),
                      "a baseline must be finite; fix the single gate first");
      }
    }
  }
  return {};
}

nlohmann::json to_json(const Baseline& b) {
  nlohmann::json steps = nlohmann::json::array();
  for (const BaselineStep& s : b.steps) {
    steps.push_back({{"global_step", s.global_step},
                     {"loss", optional_json(s.loss)},
                     {"grad_norm", optional_json(s.grad_norm)},
                     {"lr", optional_json(s.lr)},
                     {"samples_per_step", optional_json(s.samples_per_step)}});
    if (s.sample_count && s.sample_digest) {
      steps.back()["sample_count"] = *s.sample_count;
      steps.back()["sample_digest"] = fmt::format("{:016x}", *s.sample_digest);
      if (s.sample_repeats) steps.back()["sample_repeats"] = *s.sample_repeats;
    }
  }
  const Fingerprint& f = b.fingerprint;
  return {{"format", kFormat},
          {"name", b.name},
          {"fingerprint",
           {{"tool_version", f.tool_version},
            {"torch_version", f.torch_version},
            {"python_version", f.python_version},
            {"backend", f.backend},
            {"device", f.device},
            {"dtype", f.dtype},
            {"seed", optional_json(f.seed)},
            {"config_digest", f.config_digest},
            {"world_size", f.world_size}}},
          {"recorded",
           {{"commit", b.recorded.commit},
            {"trainer_digest", b.recorded.trainer_digest},
            {"config", b.recorded.config}}},
          {"structure",
           {{"param_count", optional_json(b.structure.param_count)},
            {"param_digest", b.structure.param_digest},
            {"input_shape", b.structure.input_shape},
            {"input_dtype", b.structure.input_dtype},
            {"steps", b.structure.steps}}},
          {"steps", std::move(steps)}};
}

Expected<Baseline> baseline_from_json(const nlohmann::json& json, const std::string& path) {
  const auto format = json.is_object() ? json.find("format") : json.end();
  const std::string given = json.is_object() && format != json.end() && format->is_string()
                                ? format->get<std::string>()
                                : std::string();
  if (given.starts_with("bigmac-baseline/") && given != kFormat) {
    // A newer (or older) tool's file: say so, not that it is no baseline at all.
    Error e = input_error(path, "format",
                          fmt::format("unsupported baseline version \"{}\": this bigmac-bringup "
                                      "reads \"{}\"",
                                      given, kFormat));
    e.hint = "record it again with this bigmac-bringup, or read it with the one that wrote it";
    return tl::unexpected(std::move(e));
  }
  if (given != kFormat) {
    return tl::unexpected(input_error(path, "format",
                                      fmt::format("not a baseline file (expected "
                                                  "\"format\": \"{}\")",
                                                  kFormat)));
  }
  Baseline b;
  b.name = json.value("name", "");
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& f = json.contains("fingerprint") ? json["fingerprint"] : empty;
  const nlohmann::json& s = json.contains("structure") ? json["structure"] : empty;
  // Files recorded before the commit and trainer were kept have no "recorded" table.
  const nlohmann::json& rec = json.contains("recorded") ? json["recorded"] : empty;
  for (const auto& [name, table] :
       {std::pair{"fingerprint", &f}, std::pair{"structure", &s}, std::pair{"recorded", &rec}}) {
    if (!table->is_object()) {
      return tl::unexpected(input_error(
          path, name,
          fmt::format("expected an object of named values, found {}", json_type_name(*table))));
    }
  }
  const char* table = "fingerprint";
  try {
    b.fingerprint.tool_version = f.value("tool_version", "");
    b.fingerprint.torch_version = f.value("torch_version", "");
    b.fingerprint.python_version = f.value("python_version", "");
    b.fingerprint.backend = f.value("backend", "");
    b.fingerprint.device = f.value("device", "");
    b.fingerprint.dtype = f.value("dtype", "");
    b.fingerprint.config_digest = f.value("config_digest", "");
    b.fingerprint.world_size = json_int(f, "world_size", std::int64_t{0});
    table = "structure";
    b.structure.param_digest = s.value("param_digest", "");
    b.structure.input_dtype = s.value("input_dtype", "");
    b.structure.input_shape = s.value("input_shape", std::vector<std::int64_t>{});
    b.structure.steps = json_int(s, "steps", std::int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's type errors ("type must be string, but is number") name no key; the table does.
    return tl::unexpected(
        input_error(path, table, fmt::format("a value of the wrong type: {}", e.what())));
  }
  try {
    b.recorded.commit = rec.value("commit", "");
    b.recorded.trainer_digest = rec.value("trainer_digest", "");
    b.recorded.config = rec.value("config", std::map<std::string, std::string>{});
  } catch (const nlohmann::json::exception& e) {
    return tl::unexpected(input_error(path, "recorded", e.what()));
  }
  auto seed = optional_field<std::int64_t>(f, "seed", "fingerprint.", path);
  if (!seed) return tl::unexpected(seed.error());
  b.fingerprint.seed = *seed;
  auto count = optional_field<std::int64_t>(s, "param_count", "structure.", path);
  if (!count) return tl::unexpected(count.error());
  b.structure.param_count = *count;

  auto steps = json.find("steps");
  if (steps == json.end() || !steps->is_array())
    return tl::unexpected(input_error(path, "steps", "expected an array of steps"));
  std::int64_t previous_reads = 0;  // samples the steps before this one read
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const nlohmann::json& step = (*steps)[i];
    const std::string where = fmt::format("steps[{}].", i);
    const auto global_step = step.is_object() && step.contains("global_step")
                                 ? json_integer(step["global_step"])
                                 : std::nullopt;
    if (!global_step || *global_step < 0) {
      return tl::unexpected(
          input_error(path, where + "global_step", "expected a step number from 0 up"));
    }
    if (!b.steps.empty() && *global_step <= b.steps.back().global_step) {
      return tl::unexpected(
          input_error(path, where + "global_step",
                      fmt::format("step {} after step {}: steps must be listed once each, in order",
                                  *global_step, b.steps.back().global_step)));
    }
    BaselineStep out;
    out.global_step = *global_step;
    auto loss = optional_field<double>(step, "loss", where, path);
    auto grad = optional_field<double>(step, "grad_norm", where, path);
    auto lr = optional_field<double>(step, "lr", where, path);
    auto sps = optional_field<std::int64_t>(step, "samples_per_step", where, path);
    if (!loss) return tl::unexpected(loss.error());
    if (!grad) return tl::unexpected(grad.error());
    if (!lr) return tl::unexpected(lr.error());
    if (!sps) return tl::unexpected(sps.error());
    // What check_recordable requires of a recorded baseline, required of a read one: a step
    // without its loss would be blamed on the run's log (issue 30 item 19).
    if (!*loss) {
      return tl::unexpected(input_error(
          path, where + "loss",
          fmt::format("step {} has no loss (a baseline holds every step's loss)", *global_step)));
    }
    for (const auto& [metric, value] : {std::pair{"grad_norm", *grad}, std::pair{"lr", *lr}}) {
      if (value && *value < 0) {
        return tl::unexpected(input_error(
            path, where + metric,
            fmt::format("must be at least 0, found {}: a {} is never negative", *value, metric)));
      }
    }
    out.loss = *loss;
    out.grad_norm = *grad;
    out.lr = *lr;
    if (*sps && (**sps < 1 || **sps > std::numeric_limits<int>::max())) {
      return tl::unexpected(input_error(path, where + "samples_per_step",
                                        fmt::format("expected a count from 1 to {}, found {}",
                                                    std::numeric_limits<int>::max(), **sps)));
    }
    out.samples_per_step = *sps;
    auto sample_count = optional_field<std::int64_t>(step, "sample_count", where, path);
    if (!sample_count) return tl::unexpected(sample_count.error());
    auto sample_digest = optional_field<std::string>(step, "sample_digest", where, path);
    if (!sample_digest) return tl::unexpected(sample_digest.error());
    if (sample_count->has_value() != sample_digest->has_value()) {
      return tl::unexpected(input_error(
          path, where + (*sample_count ? "sample_digest" : "sample_count"),
          "sample_count and sample_digest come together (the step's sample set), or neither"));
    }
    if (*sample_count) {
      const std::string& hex = **sample_digest;
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
      if (**sample_count < 0 || hex.empty() || hex.size() > 16 || ec != std::errc() ||
          end != hex.data() + hex.size()) {
        return tl::unexpected(
            input_error(path, where + (**sample_count < 0 ? "sample_count" : "sample_digest"),
                        fmt::format("expected a count from 0 and up to 16 hex digits, found {} "
                                    "and \"{}\"",
                                    **sample_count, hex)));
      }
      out.sample_count = **sample_count;
      out.sample_digest = value;
      auto repeats = optional_field<std::int64_t>(step, "sample_repeats", where, path);
      if (!repeats) return tl::unexpected(repeats.error());
      if (*repeats && (**repeats < 0 || **repeats > **sample_count + previous_reads)) {
        return tl::unexpected(input_error(
            path, where + "sample_repeats",
            fmt::format("expected a count from 0 to the samples read so far ({}), found {}",
                        **sample_count + previous_reads, **repeats)));
      }
      previous_reads += **sample_count;
      out.sample_repeats = *repeats;
    }
    b.steps.push_back(out);
  }
  if (auto partial = partly_logged(b); partial) {
    return tl::unexpected(input_error(
        path, fmt::format("steps[{}].{}", partial->index, partial->metric),
        fmt::format("step {} has no {} while other steps have one (a baseline holds a metric "
                    "on every step or on none)",
                    b.steps[partial->index].global_step, partial->metric)));
  }
  if (b.steps.empty()) {
    return tl::unexpected(input_error(path, "steps",
                                      "no steps: a baseline holds the per-step values of a "
                                      "passed first gate"));
  }
  if (b.structure.steps != static_cast<std::int64_t>(b.steps.size())) {
    return tl::unexpected(
        input_error(path, "structure.steps",
                    fmt::format("says {} steps, but {} are listed: the file contradicts itself",
                                b.structure.steps, b.steps.size())));
  }
  return b;
}

Expected<Baseline> load_baseline(const std::filesystem::path& path) {
  auto json = read_json_file(path);
  if (!json) return tl::unexpected(json.error());
  return baseline_from_json(*json, path.string());
}

Expected<void> save_baseline(const std::filesystem::path& path, const Baseline& baseline) {
  if (auto ok = check_recordable(baseline); !ok) return ok;
  return write_file_atomically(path, json_text(to_json(baseline), 2) + "\n");
}

std::string text_digest(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string file_digest(const std::filesystem::path& path) {
  auto text = read_file(path);
  return text ? text_digest(*text) : std::string();
}

std::string trainer_digest(const std::vector<std::filesystem::path>& files) {
  std::string parts;
  for (const std::filesystem::path& file : files) {
    const std::string digest = file_digest(file);
    if (!digest.empty()) parts += file.filename().string() + "=" + digest + "\n";
  }
  return parts.empty() ? std::string() : text_digest(parts);
}

std::string ci_commit() {
  for (const char* name : {"GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return {};
}

}  // namespace bigmac::baseline
