#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "core/error.h"
#include "diagnose/diagnosis.h"
#include "gates/gate_verdict.h"
#include "logs/parser_options.h"
#include "logs/record.h"
#include "report/attempt_result.h"
#include "run/run_state.h"

namespace bigmac::report {

/// The diagnose module writes diagnoses but does not read them back; the report does.
diagnose::Diagnosis diagnosis_from_json(const nlohmann::json& json);

/// One gate as the report shows it: its row in the run state and what its last attempt left.
struct GateReport {
  run::GateRecord record;
  std::size_t index = 0;    ///< position in the run (0-based)
  std::string attempt_dir;  ///< folder name ("02-dp.1"); empty when it never launched
  std::optional<gates::GateVerdict> verdict;
  std::vector<diagnose::Diagnosis> diagnoses;  ///< best first
  std::optional<AttemptResult> result;
  std::vector<logs::StepRecord> steps;                ///< the owner's steps
  std::vector<logs::MicroBatchRecord> micro_batches;  ///< every rank's `mb` events
  int ranks_logged = 0;                               ///< rank logs found
  /// Field -> "trainer", "probe" or both, when the probe ran (AttemptRecords::field_sources).
  std::map<std::string, std::string> field_sources;
  double first_t = 0, last_t = 0;  ///< wall-time range of the logs (0: none)
  std::vector<std::string> notes;  ///< what was missing or unreadable, in words
  /// The attempt folder's files worth opening (rank<N>.log/.stdout/.stderr, gate.toml,
  /// launch-plan.json, ...), by name, in name order: the report links them.
  std::vector<std::string> files;

  /// Seconds the attempt ran: result.json, else the logs' time range, else 0.
  double duration_s() const;
  /// Unix seconds it started: result.json, else the first log line, else 0.
  double started_at() const;
  bool pipelined() const { return !micro_batches.empty(); }
};

/// Everything the reports show about one run.
struct ReportInput {
  std::string run_dir;
  run::RunState state;
  std::optional<baseline::Baseline> baseline;
  std::string baseline_path;  ///< as given; empty when none
  std::vector<GateReport> gates;
  std::vector<std::string> notes;  ///< run-level problems (unreadable baseline, ...)
  /// invocation.json as the run recorded it (configuration, --set, baseline, where it started);
  /// null when the run directory has none.
  nlohmann::json invocation;
  std::string tool_version;  ///< of the tool writing the report

  int count(run::GateStatus status) const;
};

/// Reads reports/<run-id>/: state.json (required: an input Error when missing or damaged),
/// then for each gate that launched its last attempt folder (verdict.json, diagnosis.json,
/// result.json, rank<N>.log). A missing or partial attempt (a run killed mid-gate) becomes a
/// note on that gate, never an error. `baseline_path` may be empty (no baseline plotted).
/// `parser` reads the rank logs of an attempt that left no records.json: give the run's
/// (logs::parser_options of its configuration), or its logs are read as `auto`.
Expected<ReportInput> load_report_input(const std::filesystem::path& run_dir,
                                        const std::filesystem::path& baseline_path = {},
                                        const logs::ParserOptions& parser = {});

}  // namespace bigmac::report
