#include "gates/settings_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "audit/audit_hint.h"
#include "config/schema.h"
#include "gates/observability.h"
#include "launch/trainer_invocation.h"

namespace bigmac::gates {
namespace {

/// One value as a rank reported it, with the line that said so.
struct Reported {
  std::string value;
  CheckEvidence evidence;
};

/// A value the gate set: its name in the log contract, the configuration key that holds it,
/// what the gate asked for and what each rank reported.
struct Applied {
  std::string field;  ///< observability field name
  std::string key;    ///< "train.micro_batch_size"
  std::string asked;
  std::vector<Reported> reported;
};

// Where a value must be written: its table and the layer of the code that consumes it.
std::string write_where(const std::string& key) {
  if (key == "derived.dp") {
    return "dp is derived (world size / (pp × tp)): write launch.nnodes × "
           "launch.nproc_per_node and parallel.pp_size / parallel.tp_size";
  }
  const auto dot = key.find('.');
  const config::SchemaEntry* entry = config::find_entry(key.substr(0, dot), key.substr(dot + 1));
  if (!entry) return "write " + key;
  return fmt::format("write it as {} in [{}] ({} layer, read by the code that consumes it)", key,
                     entry->table, config::layer_name(entry->layer));
}

template <class R, class Get>
void report_each(const GateEvidence& evidence, std::vector<Reported>& out, const char* what,
                 Get get) {
  for (const RankEvidence& r : evidence.ranks) {
    for (const R& record : r.template all<R>()) {
      if (auto v = get(record)) {
        out.push_back(Reported{*v, evidence_of(record, fmt::format("{} {}", what, *v))});
      }
    }
  }
}

// A zero in these events means the field was absent: no trainer runs with a size of 0.
std::optional<std::string> positive(std::int64_t v) {
  return v > 0 ? std::optional<std::string>(std::to_string(v)) : std::nullopt;
}

// The value a `[cfg]` line printed for one setting (seed 001's effective-configuration line),
// reported beside what the events say: a trainer that prints only that line is observable too.
void report_cfg(const GateEvidence& e, std::vector<Reported>& out, const char* what,
                std::optional<std::int64_t> logs::SettingsRecord::*field) {
  report_each<logs::SettingsRecord>(e, out, what, [&](const logs::SettingsRecord& r) {
    const auto& v = r.*field;
    return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
  });
}

// Whether the gate handed `field` to the trainer at all. bigmac-train reads every value from
// its gate file; a command trainer gets what its argv template names (`{seq_length}`), or all
// of them when it reads the gate file (`{gate_config}`). The world size always reaches it
// (WORLD_SIZE). A value the trainer was never given did not fail to take effect.
bool handed_to_trainer(const config::Config& c, const std::string& field) {
  return field == "world_size" || launch::trainer_receives(c, field);
}

std::vector<Applied> applied_values(const CheckContext& ctx) {
  const config::Config& c = ctx.plan.config;
  const GateEvidence& e = ctx.evidence;
  std::vector<Applied> out;
  Applied world{"world_size", "launch.nproc_per_node", std::to_string(ctx.plan.nproc), {}};
  report_each<logs::RunRecord>(e, world.reported, "run world_size",
                               [](const auto& r) { return positive(r.world_size); });
  report_each<logs::PgReadyRecord>(e, world.reported, "pg_ready world_size",
                                   [](const auto& r) { return positive(r.world_size); });
  report_cfg(e, world.reported, "[cfg] world_size", &logs::SettingsRecord::world_size);
  out.push_back(std::move(world));
  Applied pp{"pp", "parallel.pp_size", std::to_string(c.parallel.pp_size), {}};
  report_each<logs::LayoutRecord>(e, pp.reported, "layout num_stages",
                                  [](const auto& r) { return positive(r.num_stages); });
  report_cfg(e, pp.reported, "[cfg] pp", &logs::SettingsRecord::pp);
  out.push_back(std::move(pp));
  Applied dp{"dp", "derived.dp", std::to_string(c.derived.dp), {}};
  report_each<logs::BatchRecord>(e, dp.reported, "batch dp",
                                 [](const auto& r) { return positive(r.dp); });
  report_each<logs::LayoutRecord>(e, dp.reported, "layout dp_size",
                                  [](const auto& r) { return positive(r.dp_size); });
  report_cfg(e, dp.reported, "[cfg] dp", &logs::SettingsRecord::dp);
  // No contract event carries tp; the ranks imply it as world size / (pp × dp) when they report
  // all three (a single process implies tp 1 with pp and dp 1).
  Applied tp{"tp", "parallel.tp_size", std::to_string(c.parallel.tp_size), {}};
  report_cfg(e, tp.reported, "[cfg] tp", &logs::SettingsRecord::tp);
  const Applied& w = out.front();
  const Applied& p = out.back();
  const std::int64_t ranks = w.reported.empty() ? 0 : std::stoll(w.reported.front().value);
  const std::int64_t stages =
      !p.reported.empty() ? std::stoll(p.reported.front().value) : (ranks == 1 ? 1 : 0);
  const std::int64_t replicas = !dp.reported.empty() ? std::stoll(dp.reported.front().value) : 0;
  if (tp.reported.empty() && ranks > 0 && stages > 0 && replicas > 0 &&
      ranks % (stages * replicas) == 0) {
    const std::string v = std::to_string(ranks / (stages * replicas));
    tp.reported.push_back(Reported{
        v, CheckEvidence{w.reported.front().evidence.rank, w.reported.front().evidence.line,
                         fmt::format("world size {} / (pp {} × dp {}) = tp {}", ranks, stages,
                                     replicas, v)}});
  }
  out.push_back(std::move(tp));
  out.push_back(std::move(dp));
  Applied micro{
      "micro_batch_size", "train.micro_batch_size", std::to_string(c.train.micro_batch_size), {}};
  report_each<logs::BatchRecord>(e, micro.reported, "batch micro_batch_size",
                                 [](const auto& r) { return positive(r.micro_batch_size); });
  report_cfg(e, micro.reported, "[cfg] micro_bs", &logs::SettingsRecord::micro_batch_size);
  out.push_back(std::move(micro));
  Applied accum{"grad_accum",
                "train.gradient_accumulation_steps",
                std::to_string(c.train.gradient_accumulation_steps),
                {}};
  report_each<logs::BatchRecord>(e, accum.reported, "batch grad_accum",
                                 [](const auto& r) { return positive(r.grad_accum); });
  report_cfg(e, accum.reported, "[cfg] accum", &logs::SettingsRecord::grad_accum);
  out.push_back(std::move(accum));
  Applied seq{"seq_length", "train.seq_length", std::to_string(c.train.seq_length), {}};
  report_each<logs::BatchRecord>(e, seq.reported, "batch seq_length",
                                 [](const auto& r) { return positive(r.seq_length); });
  report_cfg(e, seq.reported, "[cfg] seq_length", &logs::SettingsRecord::seq_length);
  out.push_back(std::move(seq));
  if (c.parallel.pp_size > 1) {
    // The split points are where stages 1.. begin: the first layer each later stage reports.
    Applied split{"split_points",
                  "model.split_points",
                  fmt::format("[{}]", fmt::join(c.model.split_points, ",")),
                  {}};
    std::map<int, const logs::LayoutRecord*> starts;
    for (const RankEvidence& r : e.ranks) {
      for (const logs::LayoutRecord& l : r.layouts) {
        if (l.stage > 0 && l.first_layer >= 0) starts.emplace(l.stage, &l);
      }
    }
    if (static_cast<int>(starts.size()) == c.parallel.pp_size - 1) {
      std::vector<int> points;
      for (const auto& [stage, l] : starts) points.push_back(l->first_layer);
      const std::string v = fmt::format("[{}]", fmt::join(points, ","));
      split.reported.push_back(
          Reported{v, evidence_of(*starts.begin()->second, "layout first layers " + v)});
    }
    report_each<logs::SettingsRecord>(
        e, split.reported, "[cfg] split_points", [](const logs::SettingsRecord& r) {
          return r.split_points ? std::optional<std::string>(
                                      fmt::format("[{}]", fmt::join(*r.split_points, ",")))
                                : std::nullopt;
        });
    out.push_back(std::move(split));
  }
  Applied seed{"seed", "train.seed", std::to_string(c.train.seed), {}};
  // A `run` event without a seed reads as 0; only a seed the gate did not ask for counts.
  report_each<logs::RunRecord>(e, seed.reported, "run seed", [&](const auto& r) {
    return r.seed != 0 || c.train.seed == 0 ? std::optional<std::string>(std::to_string(r.seed))
                                            : std::nullopt;
  });
  // The probe's: the seed in effect when the model's first parameter was made, so a dataset
  // that seeds itself per item is not taken for the run's seed.
  report_each<logs::ModelRecord>(e, seed.reported, "model seed", [](const auto& r) {
    return r.seed ? std::optional<std::string>(std::to_string(*r.seed)) : std::nullopt;
  });
  report_cfg(e, seed.reported, "[cfg] seed", &logs::SettingsRecord::seed);
  out.push_back(std::move(seed));
  return out;
}

}  // namespace

CheckResult check_settings_applied(const CheckContext& ctx) {
  const char* name = "settings_applied";
  std::vector<std::string> unlogged;
  std::vector<std::string> mismatches;
  std::vector<CheckEvidence> evidence;
  std::size_t confirmed = 0;
  for (const Applied& a : applied_values(ctx)) {
    if (!handed_to_trainer(ctx.plan.config, a.field)) continue;
    if (a.reported.empty()) {
      unlogged.push_back(a.field);
      continue;
    }
    const Reported* wrong = nullptr;
    for (const Reported& r : a.reported) {
      if (r.value != a.asked) {
        wrong = &r;
        break;
      }
    }
    if (!wrong) {
      ++confirmed;
      continue;
    }
    mismatches.push_back(fmt::format("{}: the gate asked for {}, rank {} ran with {}; {}", a.field,
                                     a.asked, wrong->evidence.rank, wrong->value,
                                     write_where(a.key)));
    evidence.push_back(wrong->evidence);
  }
  if (!mismatches.empty()) {
    std::string message = mismatches.front();
    if (mismatches.size() > 1)
      message += fmt::format(" (and {} more: {})", mismatches.size() - 1,
                             fmt::join(mismatches.begin() + 1, mismatches.end(), "; "));
    message += ". " + audit::settings_applied_hint();
    return certain(fail(name, std::move(message), std::move(evidence)), -1);
  }
  if (confirmed == 0)
    return not_logged(ctx.evidence, name, "no rank reports a value it runs with", unlogged);
  if (!unlogged.empty()) {
    return unobservable(
        name,
        fmt::format("{} values as asked; not reported: {}", confirmed, fmt::join(unlogged, ", ")),
        unlogged);
  }
  return pass(name,
              fmt::format("all {} values the gate set are what the ranks ran with", confirmed));
}

}  // namespace bigmac::gates
