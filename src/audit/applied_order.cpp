#include "audit/applied_order.h"

#include <algorithm>

namespace bigmac::audit {

std::vector<const Place*> writes_in_order(const ProjectFacts& facts, const RunGroup& run,
                                          Setting setting) {
  std::vector<const Place*> out;
  for (const Place& p : facts.places) {
    if (p.setting == setting && p.literal_write() && run.files.count(p.file)) out.push_back(&p);
  }
  auto file_index = [&](const std::string& file) {
    return std::find(facts.files.begin(), facts.files.end(), file) - facts.files.begin();
  };
  std::stable_sort(out.begin(), out.end(), [&](const Place* a, const Place* b) {
    if (a->source != b->source) return a->source < b->source;
    if (a->file != b->file) return file_index(a->file) < file_index(b->file);
    return a->line < b->line;
  });
  return out;
}

const Place* effective_write(const ProjectFacts& facts, const RunGroup& run, Setting setting) {
  auto writes = writes_in_order(facts, run, setting);
  return writes.empty() ? nullptr : writes.back();
}

}  // namespace bigmac::audit
