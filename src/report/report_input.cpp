#include "report/report_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/atomic_file.h"
#include "core/json_file.h"
#include "logs/rank_log.h"
#include "report/attempt_logs.h"
#include "report/attempt_records.h"
#include "run/run_directory.h"

namespace bigmac::report {
namespace {

namespace fs = std::filesystem;

/// A JSON file of the attempt folder, or nullopt with a note saying why it is missing.
std::optional<nlohmann::json> read_json(const fs::path& file, std::vector<std::string>& notes) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    notes.push_back(fmt::format("{} is missing", file.filename().string()));
    return std::nullopt;
  }
  auto text = read_file(file);
  if (!text) {
    notes.push_back(
        fmt::format("{} unreadable: {}", file.filename().string(), text.error().message));
    return std::nullopt;
  }
  auto json = parse_json(*text, file);
  if (!json) {
    notes.push_back(fmt::format("{} is not valid JSON (written partly?): {}",
                                file.filename().string(), json.error().format()));
    return std::nullopt;
  }
  return std::move(*json);
}

/// `decode(json)` of a file of the attempt folder; a value of the wrong type (a damaged or
/// hand-edited file) becomes a note instead of stopping the report.
template <class Decode>
void decode_into(const fs::path& file, const nlohmann::json& json, std::vector<std::string>& notes,
                 Decode decode) {
  try {
    decode(json);
  } catch (const nlohmann::json::exception& e) {
    notes.push_back(fmt::format("{} is damaged: {}", file.filename().string(), e.what()));
  }
}

/// What the reports show of an attempt's logs: records.json, written when the attempt ended.
/// An attempt that never ended (the orchestrator was killed mid-gate) has none; its rank logs
/// are then the only account of what ran, and are read here once.
void read_records(const fs::path& dir, const logs::ParserOptions& parser, GateReport& gate) {
  std::error_code ec;
  AttemptRecords records;
  if (fs::exists(dir / kAttemptRecordsName, ec)) {
    auto json = read_json(dir / kAttemptRecordsName, gate.notes);
    if (!json) return;
    records = attempt_records_from_json(*json);
  } else {
    auto ranks = read_attempt_logs(dir, parser);
    if (!ranks) {
      gate.notes.push_back("rank logs unreadable: " + ranks.error().format());
      return;
    }
    if (ranks->empty()) {
      gate.notes.push_back("no rank logs (rank<N>.log, rank<N>.stdout) in " + gate.attempt_dir);
      return;
    }
    records = attempt_records_of(*ranks);
    records.ranks_logged = static_cast<int>(ranks->size());
  }
  gate.ranks_logged = records.ranks_logged;
  gate.first_t = records.first_t;
  gate.last_t = records.last_t;
  gate.steps = std::move(records.steps);
  gate.micro_batches = std::move(records.micro_batches);
  gate.field_sources = std::move(records.field_sources);
}

GateReport read_gate(const fs::path& run_dir, const run::GateRecord& record, std::size_t index,
                     const logs::ParserOptions& parser) {
  GateReport gate;
  gate.record = record;
  gate.index = index;
  if (record.attempts <= 0) return gate;
  gate.attempt_dir = run::attempt_folder(index, record.id, record.attempts);
  const fs::path dir = run_dir / gate.attempt_dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    gate.notes.push_back("attempt folder " + gate.attempt_dir + " is missing");
    return gate;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file(ec) && (ext == ".log" || ext == ".stdout" || ext == ".stderr" ||
                                      ext == ".toml" || ext == ".json" || ext == ".jsonl")) {
      gate.files.push_back(name);
    }
  }
  std::sort(gate.files.begin(), gate.files.end());
  const bool finished =
      record.status == run::GateStatus::kPassed || record.status == run::GateStatus::kFailed;
  std::vector<std::string> missing;
  if (auto json = read_json(dir / "verdict.json", finished ? gate.notes : missing)) {
    decode_into(dir / "verdict.json", *json, gate.notes,
                [&](const nlohmann::json& j) { gate.verdict = gates::verdict_from_json(j); });
  }
  if (auto json = read_json(dir / "result.json", finished ? gate.notes : missing)) {
    decode_into(dir / "result.json", *json, gate.notes,
                [&](const nlohmann::json& j) { gate.result = attempt_result_from_json(j); });
  }
  if (record.status == run::GateStatus::kFailed) {
    if (auto json = read_json(dir / "diagnosis.json", gate.notes); json && json->is_array()) {
      decode_into(dir / "diagnosis.json", *json, gate.notes, [&](const nlohmann::json& j) {
        for (const auto& d : j) gate.diagnoses.push_back(diagnosis_from_json(d));
      });
    }
  }
  if (!finished && !missing.empty()) {
    gate.notes.push_back("attempt " + gate.attempt_dir + " did not finish (" +
                         std::string(run::status_name(record.status)) + "); no verdict");
  }
  read_records(dir, parser, gate);
  return gate;
}

}  // namespace

diagnose::Diagnosis diagnosis_from_json(const nlohmann::json& j) {
  diagnose::Diagnosis d;
  if (!j.is_object()) return d;
  d.id = j.value("id", "");
  d.klass = j.value("class", "");
  d.symptom = j.value("symptom", "");
  d.cause = j.value("cause", "");
  d.fix = j.value("fix", "");
  d.gate = j.value("gate", "");
  d.confidence = j.value("confidence", 0.0);
  d.specificity = json_int(j, "specificity", 0);
  d.failed_rank = json_int(j, "failed_rank", -1);
  d.matches = json_int(j, "matches", std::int64_t{0});
  for (const auto& e : j.value("evidence", nlohmann::json::array())) {
    d.evidence.push_back(diagnose::Evidence{json_int(e, "rank", -1), e.value("file", ""),
                                            json_int(e, "line", std::int64_t{0}), e.value("t", 0.0),
                                            e.value("text", "")});
  }
  d.explains = j.value("explains", std::vector<std::string>{});
  return d;
}

double GateReport::duration_s() const {
  if (result && result->duration_s > 0) return result->duration_s;
  return last_t > first_t ? last_t - first_t : 0;
}

double GateReport::started_at() const {
  if (result && result->started_at > 0) return result->started_at;
  return first_t;
}

int ReportInput::count(run::GateStatus status) const {
  return static_cast<int>(std::count_if(
      gates.begin(), gates.end(), [&](const GateReport& g) { return g.record.status == status; }));
}

Expected<ReportInput> load_report_input(const fs::path& run_dir, const fs::path& baseline_path,
                                        const logs::ParserOptions& parser) {
  auto state = run::read_run_state(run_dir);
  if (!state) return tl::unexpected(state.error());
  ReportInput input;
  input.run_dir = run_dir.string();
  input.state = std::move(*state);
  if (!baseline_path.empty()) {
    input.baseline_path = baseline_path.string();
    auto loaded = baseline::load_baseline(baseline_path);
    if (loaded) {
      input.baseline = std::move(*loaded);
    } else {
      input.notes.push_back("baseline not shown: " + loaded.error().format());
    }
  }
  for (std::size_t i = 0; i < input.state.gates.size(); ++i) {
    input.gates.push_back(read_gate(run_dir, input.state.gates[i], i, parser));
  }
  // How the run was started; a damaged one is a note, not an error.
  std::error_code ec;
  if (fs::exists(run_dir / run::kInvocationFile, ec)) {
    if (auto json = read_json(run_dir / run::kInvocationFile, input.notes))
      input.invocation = *json;
  }
  input.tool_version = BIGMAC_VERSION;
  return input;
}

}  // namespace bigmac::report
