#include "report/diagnosis_text.h"

#include <fmt/format.h>

namespace bigmac::report {

std::string evidence_line(const diagnose::Evidence& e) {
  std::string out;
  if (e.rank >= 0) out += fmt::format("rank {} ", e.rank);
  if (!e.file.empty()) {
    out += e.file;
    if (e.line > 0) out += fmt::format(":{}", e.line);
    out += ": ";
  }
  return out + e.text;
}

std::string diagnosis_text(const diagnose::Diagnosis& d) {
  std::string out = fmt::format("Symptom: {}\nCause: {}\nFix: {}\nGo back to: {}\n", d.symptom,
                                d.cause, d.fix, d.gate.empty() ? "(unknown)" : d.gate);
  for (const auto& e : d.evidence) out += "  " + evidence_line(e) + "\n";
  return out;
}

}  // namespace bigmac::report
