#include "diagnose/log_diagnosis.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/exit_code.h"
#include "core/json_file.h"
#include "diagnose/diagnoser.h"
#include "diagnose/log_reading.h"
#include "diagnose/text_scan.h"

namespace bigmac::diagnose {
namespace {

Expected<Catalog> resolve_catalog(const std::string& given) {
  if (!given.empty()) return load_catalog(given);
  if (const char* env = std::getenv("BIGMAC_DIAGNOSES"); env != nullptr && *env != '\0') {
    return load_catalog(env);
  }
  return builtin_catalog();
}

/// The ranks' own last error lines from an attempt folder's result.json (written by
/// report/attempt_result.cpp: `ranks[].rank`, `ranks[].error_lines`), so that `diagnose
/// <attempt folder>` judges with what the run knew. None for any other path.
std::vector<RankErrorLines> attempt_exit_errors(const std::vector<std::string>& paths) {
  std::vector<RankErrorLines> errors;
  if (paths.size() != 1) return errors;
  const std::filesystem::path result = std::filesystem::path(paths.front()) / "result.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(result, ec)) return errors;
  auto doc = read_json_file(result.string());
  if (!doc || !doc->is_object()) return errors;
  for (const auto& rank : doc->value("ranks", nlohmann::json::array())) {
    if (!rank.is_object() || !rank.contains("error_lines") || !rank["error_lines"].is_array())
      continue;
    RankErrorLines lines{rank.value("rank", -1), {}};
    for (const auto& line : rank["error_lines"]) {
      if (line.is_string()) lines.lines.push_back(line.get<std::string>());
    }
    if (!lines.lines.empty()) errors.push_back(std::move(lines));
  }
  return errors;
}

int fail(std::ostream& err, const Error& error) {
  err << "error: " << error.format() << '\n';
  return to_int(exit_code_for(error.kind) == ExitCode::kInfrastructure ? ExitCode::kInfrastructure
                                                                       : ExitCode::kBadInput);
}

}  // namespace

int run_diagnose(const DiagnoseOptions& options, std::ostream& out, std::ostream& err,
                 const std::vector<std::string>& gate_ids) {
  if (options.paths.empty()) {
    return fail(err,
                make_error(ErrorKind::kUsage, "diagnose needs at least one log file or directory"));
  }
  auto catalog = resolve_catalog(options.catalog);
  if (!catalog) return fail(err, catalog.error());
  if (!gate_ids.empty()) {
    if (Errors unknown = unknown_gates(*catalog, gate_ids); !unknown.empty()) {
      return fail(err, unknown.front());
    }
  }
  auto diagnoser = Diagnoser::create(std::move(*catalog));
  if (!diagnoser) return fail(err, diagnoser.error());

  auto files = collect_log_files(options.paths);
  if (!files) return fail(err, files.error());
  if (files->empty()) {
    Error e = make_error(ErrorKind::kInput, "no log files found",
                         "logs end in .log, .txt, .out, .err or .jsonl, or have no extension");
    e.file = options.paths.front();
    return fail(err, e);
  }
  const std::vector<RankErrorLines> exit_errors = attempt_exit_errors(options.paths);
  std::vector<Diagnosis> diagnoses;
  for (const auto& group : group_log_files(options.paths, *files)) {
    TextScan scan = diagnoser->start_scan();
    std::vector<logs::RankLog> logs;
    for (const auto& file : group) {
      auto ranks = read_log_records(file, &scan, options.parser);
      if (!ranks) return fail(err, ranks.error());
      std::move(ranks->begin(), ranks->end(), std::back_inserter(logs));
    }
    MetricInput input;
    input.logs = logs;
    input.exit_errors = exit_errors;
    std::vector<Diagnosis> found = diagnoser->finish(scan, input);
    put_ledger_findings_first(found, input);
    for (Diagnosis& d : found) diagnoses.push_back(std::move(d));
  }
  if (options.json) {
    nlohmann::json doc = {{"files", files->size()}, {"diagnoses", to_json(diagnoses)}};
    out << json_text(doc, 2) << '\n';
  } else {
    print_diagnoses(out, diagnoses);
  }
  return diagnoses.empty() ? to_int(ExitCode::kGateFailed) : to_int(ExitCode::kOk);
}

}  // namespace bigmac::diagnose
