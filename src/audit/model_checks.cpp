#include "audit/model_checks.h"

#include <fmt/format.h>

#include <set>

namespace bigmac::audit {

std::vector<Finding> check_model(const ProjectFacts& facts) {
  std::vector<Finding> out;
  std::set<std::pair<std::string, std::string>> layered;  // (file, class) holding blocks
  for (const LayerContainer& c : facts.containers) {
    layered.emplace(c.file, c.cls);
    const std::string name = fmt::format("{}.{}", c.cls, c.attr);
    if (c.kind == "dict" || c.kind == "set") {
      out.push_back(Finding{
          FindingKind::kUnorderedLayers, c.file, c.line, Setting::kLayerIds,
          fmt::format("{} holds the {} blocks in a plain {}: its modules are not registered "
                      "(their parameters are missing from parameters() and the state dict) and "
                      "nothing orders them by layer",
                      name, c.element, c.kind),
          "hold the blocks in nn.ModuleList in layer order, or in nn.ModuleDict keyed by "
          "str(layer_id)"});
    }
    if (!c.id_passed && !c.keyed_by_id) {
      out.push_back(Finding{
          FindingKind::kNoLayerId, c.file, c.line, Setting::kLayerIds,
          fmt::format("{} holds {} blocks by position only: no block is given a stable layer id, "
                      "so cutting the model into stages renumbers blocks, their parameter names "
                      "and checkpoint keys",
                      name, c.element),
          fmt::format("give each block its layer id ({}(..., layer_id=i)) or key the container "
                      "by it (nn.ModuleDict({{str(i): ...}}))",
                      c.element)});
    }
  }
  for (const ModelPart& part : facts.parts) {
    // Embeddings and heads matter in the class that holds the blocks, or the model class
    // around it (GPTModel, ...ForCausalLM); a wrapper such as an Embedding module is staged by
    // its owner.
    const bool model_class = part.cls.ends_with("Model") || part.cls.ends_with("LM");
    if (!(layered.count({part.file, part.cls}) || model_class) || part.staged ||
        facts.stage_cleared_attrs.count(part.attr)) {
      continue;
    }
    const bool embedding = part.role == "embedding";
    out.push_back(Finding{
        FindingKind::kNoStage, part.file, part.line, std::nullopt,
        fmt::format("{} {}.{} ({}) is built on every pipeline stage: no stage condition says "
                    "which stage owns it",
                    embedding ? "embedding" : "output head", part.cls, part.attr, part.ctor),
        fmt::format("build it only on the {} stage (`if is_{}: self.{} = ...`), or set it to None "
                    "on the other stages where the model is split",
                    embedding ? "first" : "last", embedding ? "first" : "last", part.attr)});
  }
  return out;
}

std::vector<Finding> check_config_print(const ProjectFacts& facts,
                                        const std::vector<RunGroup>& runs,
                                        std::vector<std::string>& unchecked) {
  std::vector<Finding> out;
  std::set<std::string> reported;
  bool any_entry = false;
  for (const RunGroup& run : runs) {
    const EntryFacts* entry = nullptr;
    for (const EntryFacts& e : facts.entries) {
      if (!run.files.count(e.file)) continue;
      if (!e.init_lines.empty() && (entry == nullptr || entry->init_lines.empty())) entry = &e;
      if (entry == nullptr && run.launched.count(e.file)) entry = &e;
    }
    if (entry == nullptr) continue;
    any_entry = true;
    bool printed = false;
    for (const ConfigPrint& p : facts.prints) {
      printed = printed || (run.files.count(p.file) && (p.whole || p.settings.size() >= 3));
    }
    if (printed || !reported.insert(entry->file).second) continue;
    const int line = !entry->init_lines.empty() ? entry->init_lines.front()
                     : entry->main_line != 0    ? entry->main_line
                                                : 1;
    out.push_back(Finding{
        FindingKind::kNoConfigPrint, entry->file, line, std::nullopt,
        fmt::format("nothing in the run of {} prints the effective configuration after "
                    "initialisation: the values the ranks really use are never shown",
                    run.root),
        fmt::format(
            "after {}:{} ({}), print once on rank 0 what took effect: world_size, nnodes, "
            "nproc_per_node, pp_size, tp_size, dp, micro_batch_size, "
            "gradient_accumulation_steps, global batch, seq_length, schedule, "
            "micro_batches, num_layers, split points (e.g. print(json.dumps({{...}})))",
            entry->file, line,
            entry->init_lines.empty() ? "the program's start" : "process group initialised")});
  }
  if (!any_entry) {
    unchecked.push_back(
        "effective-configuration print: no training entry found (no Python program started by a "
        "launch script, no init_process_group call)");
  }
  return out;
}

}  // namespace bigmac::audit
