#include "diagnose/ranking.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace bigmac::diagnose {
namespace {

// Lines without a wall time sort after timed ones, which keeps the order a strict weak one.
double first_time(const Diagnosis& d) {
  const double t = d.evidence.empty() ? 0 : d.evidence.front().t;
  return t > 0 ? t : std::numeric_limits<double>::infinity();
}

// The rank torchrun reported as the first failure, if a summary was found.
int root_cause_rank(const std::vector<Diagnosis>& diagnoses) {
  for (const Diagnosis& d : diagnoses) {
    if (d.id == "torchrun_root_cause" && d.failed_rank >= 0) return d.failed_rank;
  }
  return -1;
}

}  // namespace

void rank_diagnoses(std::vector<Diagnosis>& diagnoses) {
  const int root = root_cause_rank(diagnoses);
  std::stable_sort(diagnoses.begin(), diagnoses.end(),
                   [root](const Diagnosis& a, const Diagnosis& b) {
                     if (a.specificity != b.specificity) return a.specificity > b.specificity;
                     const double ta = first_time(a);
                     const double tb = first_time(b);
                     if (ta != tb) return ta < tb;
                     const bool ra = root >= 0 && a.failed_rank == root;
                     const bool rb = root >= 0 && b.failed_rank == root;
                     if (ra != rb) return ra;
                     if (a.confidence != b.confidence) return a.confidence > b.confidence;
                     // Unknown ranks (-1) after known ones.
                     const unsigned ka = static_cast<unsigned>(a.failed_rank);
                     const unsigned kb = static_cast<unsigned>(b.failed_rank);
                     return std::tie(ka, a.id) < std::tie(kb, b.id);
                   });
}

}  // namespace bigmac::diagnose
