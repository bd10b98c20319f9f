#include "audit/setting_checks.h"

#include <fmt/format.h>

#include <set>

#include "audit/applied_order.h"

namespace bigmac::audit {
namespace {

std::string_view consumer(config::Layer layer) {
  switch (layer) {
    case config::Layer::kLaunch:
      return "the launcher";
    case config::Layer::kModel:
      return "the model";
    default:
      return "the training loop";
  }
}

/// Where a setting of `layer` belongs: the place of the same setting that a run of `at`
/// already has in that layer, else a config file of the run holding that layer's settings.
std::string home_of(const ProjectFacts& facts, const std::vector<RunGroup>& runs, const Place& at,
                    config::Layer layer) {
  const Place* same = nullptr;
  const Place* section = nullptr;
  // Catalog order groups related settings: the nearest one already in a config file of that
  // layer shows the section to use (the global batch beside micro_batch_size).
  auto distance = [&](const Place& p) {
    const int d = static_cast<int>(p.setting) - static_cast<int>(at.setting);
    return d < 0 ? -d : d;
  };
  for (const RunGroup& run : runs) {
    if (!run.files.count(at.file)) continue;
    for (const Place& p : facts.places) {
      if (p.layer != layer || !p.literal_write() || !run.files.count(p.file)) continue;
      if (p.setting == at.setting && same == nullptr) same = &p;
      if (p.source == Source::kConfigFile &&
          (section == nullptr || distance(p) < distance(*section))) {
        section = &p;
      }
    }
  }
  if (same != nullptr) return fmt::format("keep only the value at {}", same->where());
  if (section != nullptr) {
    const auto dot = section->spelling.rfind('.');
    return dot == std::string::npos
               ? section->file
               : fmt::format("{}, under {}", section->file, section->spelling.substr(0, dot));
  }
  switch (layer) {
    case config::Layer::kLaunch:
      return "the launch script (launcher flags, #SBATCH lines or exported variables)";
    case config::Layer::kModel:
      return "the model's configuration (the model section of the config file, or the model "
             "class)";
    default:
      return "the training configuration (the config file the trainer loads)";
  }
}

std::string value_text(const Place& p) { return p.value ? p.value->text : "?"; }

std::string describe(const Place& p) {
  std::string kind(p.note.empty() ? source_name(p.source) : std::string_view(p.note));
  return fmt::format("{} {} = {}", p.where(), kind, value_text(p));
}

}  // namespace

std::vector<Finding> check_layers(const ProjectFacts& facts, const std::vector<RunGroup>& runs) {
  std::vector<Finding> out;
  for (const Place& p : facts.places) {
    const SettingInfo& s = info(p.setting);
    if (!p.literal_write() || p.layer == s.layer) continue;
    Finding f{FindingKind::kWrongLayer, p.file, p.line, p.setting, "", ""};
    f.message =
        fmt::format("{} = {} ({}) is written in the {} layer; {} is a {} setting, consumed by {}",
                    p.spelling, value_text(p), s.name, config::layer_name(p.layer), s.name,
                    config::layer_name(s.layer), consumer(s.layer));
    std::string home = home_of(facts, runs, p, s.layer);
    if (!home.starts_with("keep")) home = "write it in " + home;
    f.fix = fmt::format("{} and remove it here; {} only passes on what {} reads", home, p.file,
                        consumer(s.layer));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> check_derived(const ProjectFacts& facts) {
  std::vector<Finding> out;
  for (const Place& p : facts.places) {
    if (!p.literal_write() || !info(p.setting).derived) continue;
    const bool dp = p.setting == Setting::kDp;
    Finding f{FindingKind::kDerivedWritten, p.file, p.line, p.setting, "", ""};
    f.message = fmt::format(
        "{} = {} is written; {} is derived: {}", p.spelling, value_text(p), info(p.setting).name,
        dp ? "dp = world_size / (pp_size × tp_size)"
           : "global batch = micro_batch_size × gradient_accumulation_steps × dp");
    f.fix = dp ? "remove it; compute dp from world_size, pp_size and tp_size where it is needed, "
                 "and print the result after initialisation"
               : "remove it; write micro_batch_size and gradient_accumulation_steps, and let the "
                 "global batch follow from them and dp (print it after initialisation)";
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> check_conflicts(const ProjectFacts& facts, const std::vector<RunGroup>& runs) {
  std::vector<Finding> out;
  std::set<std::vector<const Place*>> reported;
  for (const RunGroup& run : runs) {
    for (const SettingInfo& s : setting_catalog()) {
      auto writes = writes_in_order(facts, run, s.setting);
      bool differ = false;
      for (const Place* w : writes) differ = differ || !w->value->same_as(*writes.front()->value);
      if (!differ || !reported.insert(writes).second) continue;
      const Place& winner = *writes.back();
      std::string order;
      for (const Place* w : writes) order += (order.empty() ? "" : " → ") + describe(*w);
      Finding f{FindingKind::kConflict, winner.file, winner.line, s.setting, "", ""};
      f.message = fmt::format("{} has {} values in one run; they apply in this order: {} (wins)",
                              s.name, writes.size(), order);
      if (writes.front()->source == Source::kDefault && writes.front()->source < winner.source) {
        f.message += fmt::format(
            "; the default at {} never takes effect, so changing it changes "
            "nothing",
            writes.front()->where());
      }
      // Keep the write in the setting's own layer, a config file first.
      const Place* keep = &winner;
      for (const Place* w : writes) {
        if (w->layer == s.layer && (keep->layer != s.layer || w->source == Source::kConfigFile)) {
          keep = w;
        }
      }
      std::string others;
      for (const Place* w : writes) {
        if (w != keep) others += (others.empty() ? "" : ", ") + w->where();
      }
      f.fix = fmt::format("write {} once, at {} ({} layer), and remove it from {}", s.name,
                          keep->where(), config::layer_name(s.layer), others);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace bigmac::audit
