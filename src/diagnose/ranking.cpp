#include "diagnose/ranking.h"

#include <algorithm>
#include <limits>
#include <map>
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

// A launcher's report of a failed rank (class child_failed: torchrun's summary, its agent's
// "failed (exitcode: 1)") is context for that rank's own error, never the headline where the
// rank's own error was read: it ranks just below the least specific diagnosis of another class
// that names the same rank. Its own specificity holds where the rank left no error of its own.
std::vector<double> effective_specificity(const std::vector<Diagnosis>& diagnoses) {
  std::map<int, int> own;  // rank -> the lowest specificity of its own diagnoses
  for (const Diagnosis& d : diagnoses) {
    // A peer that closed its connection is a consequence of another rank's exit, not the
    // rank's own cause (it always ranks last, below).
    if (d.klass == kChildFailedClass || d.klass == kPeerExitedClass || d.failed_rank < 0) continue;
    auto [it, fresh] = own.try_emplace(d.failed_rank, d.specificity);
    if (!fresh) it->second = std::min(it->second, d.specificity);
  }
  std::vector<double> out;
  out.reserve(diagnoses.size());
  for (const Diagnosis& d : diagnoses) {
    double s = d.specificity;
    if (d.klass == kChildFailedClass) {
      // Just below the rank's own, the launcher's entries still in their own order.
      if (auto it = own.find(d.failed_rank); it != own.end()) {
        s = std::min(s, it->second - 1 + d.specificity / 1000.0);
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

void rank_diagnoses(std::vector<Diagnosis>& diagnoses) {
  const int root = root_cause_rank(diagnoses);
  const std::vector<double> spec = effective_specificity(diagnoses);
  std::vector<std::size_t> order(diagnoses.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t ia, std::size_t ib) {
    const Diagnosis& a = diagnoses[ia];
    const Diagnosis& b = diagnoses[ib];
    if (spec[ia] != spec[ib]) return spec[ia] > spec[ib];
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
  std::vector<Diagnosis> sorted;
  sorted.reserve(diagnoses.size());
  for (std::size_t i : order) sorted.push_back(std::move(diagnoses[i]));
  // A peer that closed its connection is a consequence: which rank the launcher reaped first is
  // an accident of scheduling, so any cause found leads it.
  diagnoses = std::move(sorted);
  put_consequences_last(diagnoses);
}

void put_consequences_last(std::vector<Diagnosis>& diagnoses) {
  // A library's message printed after a peer closed, in the same file, is how that process
  // went on failing (NCCL's proxy reporting the broken socket): the peer's exit comes first.
  const auto after_a_closed_peer = [&](const Diagnosis& d) {
    if (!d.library_message || d.evidence.empty()) return false;
    const Evidence& mine = d.evidence.front();
    return std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& p) {
      return p.klass == kPeerExitedClass &&
             std::any_of(p.evidence.begin(), p.evidence.end(), [&](const Evidence& e) {
               return e.file == mine.file && e.line < mine.line;
             });
    });
  };
  // An exception raised while handling one another diagnosis explains comes after it.
  const auto raised_while_explained = [&](const Diagnosis& d) {
    return !d.consequence_of.empty() &&
           std::any_of(diagnoses.begin(), diagnoses.end(),
                       [&](const Diagnosis& p) { return p.id == d.consequence_of; });
  };
  std::vector<char> consequence(diagnoses.size());
  for (std::size_t i = 0; i < diagnoses.size(); ++i)
    consequence[i] = after_a_closed_peer(diagnoses[i]) || raised_while_explained(diagnoses[i]);
  std::vector<Diagnosis> causes, peers, later;
  for (std::size_t i = 0; i < diagnoses.size(); ++i) {
    if (diagnoses[i].klass == kPeerExitedClass) {
      peers.push_back(std::move(diagnoses[i]));
    } else if (consequence[i] != 0) {
      later.push_back(std::move(diagnoses[i]));
    } else {
      causes.push_back(std::move(diagnoses[i]));
    }
  }
  for (auto* part : {&peers, &later}) {
    causes.insert(causes.end(), std::make_move_iterator(part->begin()),
                  std::make_move_iterator(part->end()));
  }
  diagnoses = std::move(causes);
}

}  // namespace bigmac::diagnose
