#include "diagnose/diagnoser.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "diagnose/ranking.h"
#include "diagnose/text_scan.h"

namespace bigmac::diagnose {

Diagnoser::Diagnoser() = default;
Diagnoser::Diagnoser(Diagnoser&&) noexcept = default;
Diagnoser& Diagnoser::operator=(Diagnoser&&) noexcept = default;
Diagnoser::~Diagnoser() = default;

Expected<Diagnoser> Diagnoser::create(Catalog catalog) {
  Diagnoser d;
  d.catalog_ = std::make_unique<Catalog>(std::move(catalog));
  auto matcher = TextMatcher::build(*d.catalog_);
  if (!matcher) return tl::unexpected(matcher.error());
  d.matcher_ = std::make_unique<TextMatcher>(std::move(*matcher));
  return d;
}

namespace {

/// Every planned rank logged `pg_ready`: the process group formed.
bool process_group_formed(const MetricInput& input) {
  if (input.launch == nullptr || input.launch->planned_world_size <= 0) return false;
  std::set<int> ready;
  for (const logs::RankLog& log : input.logs) {
    if (!log.pg_ready.empty() && log.rank >= 0) ready.insert(log.rank);
  }
  for (int rank = 0; rank < input.launch->planned_world_size; ++rank) {
    if (!ready.contains(rank)) return false;
  }
  return true;
}

/// Drops what a later fact of the same attempt disproves. A port that could not be bound is no
/// cause once every rank joined the process group: torchrun agents of several nodes on one host
/// all try to serve the rendezvous store, the first wins and the others warn that the port is
/// in use, then connect to it (torch.distributed.elastic's c10d rendezvous backend).
void drop_disproved(std::vector<Diagnosis>& diagnoses, const MetricInput& input) {
  if (!process_group_formed(input)) return;
  std::erase_if(diagnoses, [](const Diagnosis& d) { return d.klass == kPortInUseClass; });
}

}  // namespace

TextScan Diagnoser::start_scan() const { return TextScan(*matcher_); }

std::vector<Diagnosis> Diagnoser::diagnose(const MetricInput& input) const {
  // The whole logs are read first: what they show of the run (ranks, launcher, stages) is the
  // context of the failed ranks' own last lines too.
  TextScan scan(*matcher_);
  for (const logs::RankLog& log : input.logs) {
    scan.begin_file(log.label());
    for (const logs::TextLine& line : log.context.lines()) scan.add_line(line);
  }
  LogContext known = known_context(input);
  known.merge(scan.context());
  std::vector<Diagnosis> first;
  if (!input.exit_errors.empty()) {
    TextScan own(*matcher_);
    for (const launch::RankEnding& rank : input.exit_errors) {
      own.begin_file(fmt::format("rank{}.stderr (last lines)", rank.rank));
      std::int64_t number = 0;
      for (const std::string& text : rank.error_lines) {
        logs::TextLine line;
        line.at.rank = rank.rank;
        line.at.line = ++number;
        line.text = text;
        own.add_line(line);
      }
    }
    first = own.finish(known);
    rank_diagnoses(first);
  }
  std::vector<Diagnosis> rest = finish(scan, input);
  // A signature found in a failed rank's own last lines is that rank's cause: it leads, and
  // the same signature is not repeated from the full logs.
  for (Diagnosis& d : rest) {
    const bool seen =
        std::any_of(first.begin(), first.end(), [&](const Diagnosis& f) { return f.id == d.id; });
    if (!seen) first.push_back(std::move(d));
  }
  // A peer that closed its connection is a consequence, also in the first failed rank's own
  // lines: which rank the launcher reaped first is an accident of scheduling, so a cause found
  // in any log leads it.
  put_consequences_last(first);
  put_ledger_findings_first(first, input);
  drop_disproved(first, input);
  return first;
}

void put_ledger_findings_first(std::vector<Diagnosis>& diagnoses, const MetricInput& input) {
  if (input.exit_errors.empty()) return;
  auto failed_by_itself = [&](int rank) {
    return std::any_of(input.exit_errors.begin(), input.exit_errors.end(),
                       [&](const launch::RankEnding& e) { return e.rank == rank; });
  };
  // The gap explains a timeout; with none in the logs (a rank failed on a shape check, the
  // launcher stopped the others wherever they were) it is only where the ranks happened to be.
  const bool timed_out = std::any_of(diagnoses.begin(), diagnoses.end(), [](const Diagnosis& d) {
    return d.klass == "collective_timeout";
  });
  std::stable_partition(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) {
    return d.id == "collective_split" ||
           (d.id == "collective_never_reached" && timed_out && !failed_by_itself(d.failed_rank));
  });
}

LogContext known_context(const MetricInput& input) {
  LogContext known;
  if (input.launch != nullptr) known.known_world_size = input.launch->planned_world_size;
  known.stages = input.configured.pp;
  if (known.known_world_size == 0 && input.configured.dp > 0)
    known.known_world_size = input.configured.dp * std::max(1, input.configured.pp);
  return known;
}

std::vector<Diagnosis> Diagnoser::finish(TextScan& scan, const MetricInput& input) const {
  std::vector<Diagnosis> all = scan.finish(known_context(input));
  std::vector<Diagnosis> metrics = apply_metric_rules(*catalog_, input);
  all.insert(all.end(), std::make_move_iterator(metrics.begin()),
             std::make_move_iterator(metrics.end()));
  rank_diagnoses(all);
  return all;
}

}  // namespace bigmac::diagnose
