#include "report/report_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/atomic_file.h"
#include "gates/run_directory.h"
#include "logs/rank_log.h"
#include "report/attempt_records.h"

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
  auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    notes.push_back(
        fmt::format("{} is not valid JSON (written partly?)", file.filename().string()));
    return std::nullopt;
  }
  return json;
}

/// rank<N>.log files of a folder, by rank number so rank10 follows rank9.
std::vector<std::string> rank_logs(const fs::path& dir) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank", 0) != 0 || entry.path().extension() != ".log") continue;
    found.emplace_back(logs::rank_from_path(name), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [rank, path] : found) paths.push_back(std::move(path));
  return paths;
}

/// What the reports show of an attempt's logs: records.json, written when the attempt ended.
/// An attempt that never ended (the orchestrator was killed mid-gate) has none; its rank logs
/// are then the only account of what ran, and are read here once.
void read_records(const fs::path& dir, GateReport& gate) {
  std::error_code ec;
  AttemptRecords records;
  if (fs::exists(dir / kAttemptRecordsName, ec)) {
    auto json = read_json(dir / kAttemptRecordsName, gate.notes);
    if (!json) return;
    records = attempt_records_from_json(*json);
  } else {
    const auto paths = rank_logs(dir);
    if (paths.empty()) {
      gate.notes.push_back("no rank logs (rank<N>.log) in " + gate.attempt_dir);
      return;
    }
    auto loaded = logs::load_logs(paths);
    if (!loaded) {
      gate.notes.push_back("rank logs unreadable: " + loaded.error().message);
      return;
    }
    records = attempt_records_of(loaded->ranks);
    records.ranks_logged = static_cast<int>(paths.size());
  }
  gate.ranks_logged = records.ranks_logged;
  gate.first_t = records.first_t;
  gate.last_t = records.last_t;
  gate.steps = std::move(records.steps);
  gate.micro_batches = std::move(records.micro_batches);
  gate.field_sources = std::move(records.field_sources);
}

GateReport read_gate(const fs::path& run_dir, const gates::GateRecord& record, std::size_t index) {
  GateReport gate;
  gate.record = record;
  gate.index = index;
  if (record.attempts <= 0) return gate;
  gate.attempt_dir = gates::attempt_folder(index, record.id, record.attempts);
  const fs::path dir = run_dir / gate.attempt_dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    gate.notes.push_back("attempt folder " + gate.attempt_dir + " is missing");
    return gate;
  }
  const bool finished =
      record.status == gates::GateStatus::kPassed || record.status == gates::GateStatus::kFailed;
  std::vector<std::string> missing;
  if (auto json = read_json(dir / "verdict.json", finished ? gate.notes : missing)) {
    gate.verdict = gates::verdict_from_json(*json);
  }
  if (auto json = read_json(dir / "result.json", finished ? gate.notes : missing)) {
    gate.result = attempt_result_from_json(*json);
  }
  if (record.status == gates::GateStatus::kFailed) {
    if (auto json = read_json(dir / "diagnosis.json", gate.notes); json && json->is_array()) {
      for (const auto& d : *json) gate.diagnoses.push_back(diagnosis_from_json(d));
    }
  }
  if (!finished && !missing.empty()) {
    gate.notes.push_back("attempt " + gate.attempt_dir + " did not finish (" +
                         std::string(gates::status_name(record.status)) + "); no verdict");
  }
  read_records(dir, gate);
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
  d.specificity = j.value("specificity", 0);
  d.failed_rank = j.value("failed_rank", -1);
  d.matches = j.value("matches", std::int64_t{0});
  for (const auto& e : j.value("evidence", nlohmann::json::array())) {
    d.evidence.push_back(diagnose::Evidence{e.value("rank", -1), e.value("file", ""),
                                            e.value("line", std::int64_t{0}), e.value("t", 0.0),
                                            e.value("text", "")});
  }
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

int ReportInput::count(gates::GateStatus status) const {
  return static_cast<int>(std::count_if(
      gates.begin(), gates.end(), [&](const GateReport& g) { return g.record.status == status; }));
}

Expected<ReportInput> load_report_input(const fs::path& run_dir, const fs::path& baseline_path) {
  auto state = gates::read_run_state(run_dir);
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
    input.gates.push_back(read_gate(run_dir, input.state.gates[i], i));
  }
  return input;
}

}  // namespace bigmac::report
