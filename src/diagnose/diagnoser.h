#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/error.h"
#include "diagnose/catalog.h"
#include "diagnose/diagnosis.h"
#include "diagnose/log_context.h"
#include "diagnose/metric_rules.h"

namespace bigmac::diagnose {

class TextMatcher;
class TextScan;

/// The diagnosis engine: a catalog with its compiled signatures. The gate engine, the watcher
/// and the `diagnose` command all ask it the same question: what do these logs say went wrong?
class Diagnoser {
 public:
  static Expected<Diagnoser> create(Catalog catalog);

  Diagnoser(Diagnoser&&) noexcept;
  Diagnoser& operator=(Diagnoser&&) noexcept;
  ~Diagnoser();

  /// Text signatures over every TextLine of `input.logs`, metric rules over the records, the
  /// baseline and the launcher's facts; all findings ranked, best first. Signatures matched in
  /// `input.exit_errors` (the failed ranks' own last words) come before all the others.
  std::vector<Diagnosis> diagnose(const MetricInput& input) const;

  /// For logs read while text lines stream past (read_log_records with a scan): start a scan,
  /// feed it, then finish with the typed records. `diagnose` is these three steps in one.
  TextScan start_scan() const;
  std::vector<Diagnosis> finish(TextScan& scan, const MetricInput& input) const;

  const Catalog& catalog() const { return *catalog_; }

 private:
  Diagnoser();
  std::unique_ptr<Catalog> catalog_;  ///< stable address for the matcher
  std::unique_ptr<TextMatcher> matcher_;
};

/// What the gate's own run knows of its layout (planned world size, pipeline stages): the
/// context a signature's `when` variants are chosen in, with what the logs show.
LogContext known_context(const MetricInput& input);

/// Ranks that died after their collective ledgers parted: the backend's error (Gloo's size
/// check, a timeout, a closed connection) is what the mismatch did, and the ledgers say which
/// call on which line of each rank it was: `collective_split` leads. Likewise ranks that waited
/// in a collective another rank never reached until a timeout ended them
/// (`collective_never_reached`): when a timeout is among the diagnoses and that rank did not
/// fail by itself (then its own error is the cause). Only where `input.exit_errors` says ranks
/// ended on their own errors.
void put_ledger_findings_first(std::vector<Diagnosis>& diagnoses, const MetricInput& input);

}  // namespace bigmac::diagnose
