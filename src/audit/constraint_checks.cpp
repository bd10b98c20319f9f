#include "audit/constraint_checks.h"

#include <fmt/format.h>

#include <set>

#include "audit/applied_order.h"

namespace bigmac::audit {
namespace {

/// A whole number that takes effect in a run, and the place it comes from.
struct Input {
  std::int64_t value = 0;
  const Place* place = nullptr;  ///< nullptr for an assumed value
  std::string origin() const { return place ? place->where() : "not written"; }
  std::string at() const { return place ? "at " + place->where() : "not written"; }
};

class RunChecker {
 public:
  RunChecker(const ProjectFacts& facts, const RunGroup& run, std::vector<Finding>& out,
             std::set<std::string>& unchecked)
      : facts_(facts), run_(run), out_(out), unchecked_(unchecked) {}

  void check() {
    // Without a pipeline or tensor split written, the run has one of each.
    auto pp = number(Setting::kPpSize);
    pp_ = pp ? *pp : Input{1, nullptr};
    auto tp = number(Setting::kTpSize);
    tp_ = tp ? *tp : Input{1, nullptr};
    world_ = world_size();
    dp_ = derived_dp();
    check_world();
    check_global_batch();
    check_layers();
    check_split_points();
  }

 private:
  std::optional<Input> number(Setting s) const {
    const Place* p = effective_write(facts_, run_, s);
    if (p == nullptr || !p->value->integer) return std::nullopt;
    return Input{*p->value->integer, p};
  }

  void note(const std::string& what) {
    unchecked_.insert(fmt::format("{} (run of {})", what, run_.root));
  }

  void finding(const Place* at, std::optional<Setting> setting, std::string message,
               std::string fix) {
    const Place* where = at != nullptr ? at : pp_.place;
    out_.push_back(Finding{FindingKind::kConstraint, where->file, where->line, setting,
                           std::move(message), std::move(fix)});
  }

  std::optional<Input> world_size() {
    if (auto w = number(Setting::kWorldSize)) {
      world_text_ = fmt::format("world_size {} ({})", w->value, w->origin());
      return w;
    }
    auto nproc = number(Setting::kNprocPerNode);
    if (!nproc) return std::nullopt;
    auto nnodes = number(Setting::kNnodes);
    const Input nodes = nnodes ? *nnodes : Input{1, nullptr};
    world_text_ =
        fmt::format("world_size {} (nnodes {} {} × nproc_per_node {} {})",
                    nodes.value * nproc->value, nodes.value, nodes.at(), nproc->value, nproc->at());
    return Input{nodes.value * nproc->value, nproc->place};
  }

  std::optional<Input> derived_dp() const {
    if (!world_ || pp_.value * tp_.value <= 0 || world_->value % (pp_.value * tp_.value) != 0) {
      return std::nullopt;
    }
    return Input{world_->value / (pp_.value * tp_.value), nullptr};
  }

  std::string pp_tp() const {
    return fmt::format("pp_size {} ({}) × tp_size {} ({}) = {}", pp_.value, pp_.origin(), tp_.value,
                       tp_.origin(), pp_.value * tp_.value);
  }

  void check_world() {
    if (!world_) {
      if (pp_.place != nullptr)
        note(
            "world_size % (pp_size × tp_size): the world size (WORLD_SIZE, or nnodes × "
            "nproc_per_node) is not written literally");
      return;
    }
    const std::int64_t stages = pp_.value * tp_.value;
    if (stages <= 0 || world_->value % stages != 0) {
      finding(pp_.place != nullptr ? pp_.place : world_->place, Setting::kPpSize,
              fmt::format("{} is not divisible by {}", world_text_, pp_tp()),
              fmt::format("start a multiple of {} processes, or choose pp_size × tp_size that "
                          "divides {}",
                          stages, world_->value));
      return;
    }
    if (auto dp = number(Setting::kDp); dp && dp->value != dp_->value) {
      finding(dp->place, Setting::kDp,
              fmt::format("dp = {} ({}), but {} / ({}) gives dp = {}", dp->value, dp->origin(),
                          world_text_, pp_tp(), dp_->value),
              "remove dp; it follows from the world size, pp_size and tp_size");
    }
  }

  void check_global_batch() {
    auto gb = number(Setting::kGlobalBatch);
    if (!gb) return;
    auto micro = number(Setting::kMicroBatchSize);
    auto written_dp = number(Setting::kDp);
    const std::optional<Input> dp = written_dp ? written_dp : dp_;
    if (!micro || !dp) {
      note(
          "micro_batch_size × gradient_accumulation_steps × dp = global batch: micro_batch_size "
          "or dp is not known from literal values");
      return;
    }
    auto accum = number(Setting::kGradAccum);
    const std::string dp_text =
        fmt::format("dp {} ({})", dp->value, dp->place ? dp->origin() : "derived");
    if (accum) {
      const std::int64_t product = micro->value * accum->value * dp->value;
      if (product == gb->value) return;
      finding(gb->place, Setting::kGlobalBatch,
              fmt::format("micro_batch_size {} ({}) × gradient_accumulation_steps {} ({}) × {} = "
                          "{}, but global batch = {} ({})",
                          micro->value, micro->origin(), accum->value, accum->origin(), dp_text,
                          product, gb->value, gb->origin()),
              "remove the global batch and let it follow from micro × accum × dp, or change "
              "micro_batch_size or gradient_accumulation_steps so that the product is the "
              "batch you want");
      return;
    }
    const std::int64_t per_step = micro->value * dp->value;
    if (per_step > 0 && gb->value % per_step == 0) return;
    finding(gb->place, Setting::kGlobalBatch,
            fmt::format("global batch {} ({}) is not a multiple of micro_batch_size {} ({}) × {} = "
                        "{}: no whole number of accumulation steps gives it",
                        gb->value, gb->origin(), micro->value, micro->origin(), dp_text, per_step),
            fmt::format("make the global batch a multiple of {}", per_step));
  }

  void check_layers() {
    auto layers = number(Setting::kNumLayers);
    if (!layers) {
      if (pp_.place != nullptr)
        note(
            "num_layers ≥ pp_size and the split points' range: num_layers is not written "
            "literally");
      return;
    }
    layers_ = layers;
    if (layers->value >= pp_.value) return;
    finding(layers->place, Setting::kNumLayers,
            fmt::format("num_layers {} ({}) is less than pp_size {} ({}): some stage would hold "
                        "no layer",
                        layers->value, layers->origin(), pp_.value, pp_.origin()),
            fmt::format("use at most {} pipeline stages", layers->value));
  }

  void check_split_points() {
    const Place* p = effective_write(facts_, run_, Setting::kSplitPoints);
    if (p == nullptr) return;
    std::vector<std::int64_t> points;
    if (p->value->integers) {
      points = *p->value->integers;
    } else if (p->value->integer) {
      points = {*p->value->integer};
    } else {
      return;  // "auto" or a computed value
    }
    const auto count = static_cast<std::int64_t>(points.size());
    if (count != pp_.value - 1) {
      finding(
          p, Setting::kSplitPoints,
          fmt::format("{} split points {} ({}), but pp_size {} ({}) needs pp_size − 1 = {}", count,
                      p->value->text, p->where(), pp_.value, pp_.origin(), pp_.value - 1),
          fmt::format("give {} split points (the first layer of stages 1..{})", pp_.value - 1,
                      pp_.value - 1));
    }
    for (std::size_t i = 1; i < points.size(); ++i) {
      if (points[i] <= points[i - 1]) {
        finding(p, Setting::kSplitPoints,
                fmt::format("split points {} ({}) are not strictly increasing", p->value->text,
                            p->where()),
                "list each stage's first layer in increasing order");
        break;
      }
    }
    if (!layers_) return;
    for (std::int64_t point : points) {
      if (point <= 0 || point >= layers_->value) {
        finding(p, Setting::kSplitPoints,
                fmt::format("split point {} of {} ({}) is outside (0, num_layers {}) ({})", point,
                            p->value->text, p->where(), layers_->value, layers_->origin()),
                fmt::format("every split point must lie between 1 and {}", layers_->value - 1));
        break;
      }
    }
  }

  const ProjectFacts& facts_;
  const RunGroup& run_;
  std::vector<Finding>& out_;
  std::set<std::string>& unchecked_;
  Input pp_;
  Input tp_;
  std::optional<Input> world_;
  std::optional<Input> dp_;
  std::optional<Input> layers_;
  std::string world_text_;
};

}  // namespace

std::vector<Finding> check_constraints(const ProjectFacts& facts, const std::vector<RunGroup>& runs,
                                       std::vector<std::string>& unchecked) {
  std::vector<Finding> out;
  std::set<std::string> notes;
  for (const RunGroup& run : runs) RunChecker(facts, run, out, notes).check();
  unchecked.insert(unchecked.end(), notes.begin(), notes.end());
  return out;
}

}  // namespace bigmac::audit
