#include "diagnose/log_diagnosis.h"

#include <cstdlib>

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
    for (Diagnosis& d : diagnoser->finish(scan, input)) diagnoses.push_back(std::move(d));
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
