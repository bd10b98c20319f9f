#pragma once

// Shared by the metric rule files (metric_rules.cpp, pipeline_rules.cpp, launch_rules.cpp);
// not part of the module's interface.

#include <fmt/format.h>

#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/diagnosis.h"
#include "diagnose/message_template.h"
#include "diagnose/metric_rules.h"

namespace bigmac::diagnose::detail {

/// A rule's result before the catalog words it.
struct Finding {
  std::string_view rule;
  TemplateValues values;
  std::vector<Evidence> evidence;
  int failed_rank = -1;
};

/// A record with the file it came from.
template <class R>
struct Sourced {
  const R* record;
  const std::string* file;
};

template <class R>
std::vector<Sourced<R>> all_of(std::span<const logs::RankLog> logs) {
  std::vector<Sourced<R>> out;
  for (const logs::RankLog& log : logs) {
    for (const R& r : log.all<R>()) out.push_back({&r, &log.label()});
  }
  return out;
}

inline std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

template <class R>
Evidence evidence_of(const Sourced<R>& s, std::string text) {
  return Evidence{s.record->at.rank, *s.file, s.record->at.line, s.record->at.t, std::move(text)};
}

inline Evidence launcher_evidence(int rank, std::string text) {
  return Evidence{rank, "", 0, 0, "launcher: " + std::move(text)};
}

void pipeline_rules(const MetricInput& in, std::vector<Finding>& out);
void launch_rules(const MetricInput& in, std::vector<Finding>& out);

}  // namespace bigmac::diagnose::detail
