#include "report/attempt_result.h"

#include "core/json_file.h"

namespace bigmac::report {

nlohmann::json to_json(const AttemptResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const launch::RankEnding& k : r.ranks) {
    nlohmann::json item = {{"rank", k.rank}, {"duration_s", k.duration_s}};
    item["exit_code"] = k.exit_code ? nlohmann::json(*k.exit_code) : nlohmann::json(nullptr);
    if (!k.signal.empty()) item["signal"] = k.signal;
    if (!k.first_error_line.empty()) item["first_error_line"] = k.first_error_line;
    if (!k.node.empty()) item["node"] = k.node;
    if (k.node_failed) item["node_failed"] = true;
    if (!k.error_lines.empty()) item["error_lines"] = k.error_lines;
    ranks.push_back(std::move(item));
  }
  nlohmann::json out = {{"status", r.status},
                        {"started_at", r.started_at},
                        {"duration_s", r.duration_s},
                        {"ranks", std::move(ranks)}};
  if (!r.interrupted_at.empty()) out["interrupted_at"] = r.interrupted_at;
  return out;
}

AttemptResult attempt_result_from_json(const nlohmann::json& j) {
  AttemptResult r;
  if (!j.is_object()) return r;
  r.status = j.value("status", "");
  r.started_at = j.value("started_at", 0.0);
  r.duration_s = j.value("duration_s", 0.0);
  for (const auto& k : j.value("ranks", nlohmann::json::array())) {
    launch::RankEnding rank;
    rank.rank = json_int(k, "rank", 0);
    if (k.contains("exit_code") && json_integer(k["exit_code"])) {
      rank.exit_code = json_int(k, "exit_code", -1);
    }
    rank.signal = k.value("signal", "");
    rank.known = rank.exit_code.has_value() || !rank.signal.empty();
    rank.duration_s = k.value("duration_s", 0.0);
    rank.first_error_line = k.value("first_error_line", "");
    rank.node = k.value("node", "");
    rank.node_failed = k.value("node_failed", false);
    rank.error_lines = k.value("error_lines", std::vector<std::string>{});
    r.ranks.push_back(std::move(rank));
  }
  if (auto places = j.find("interrupted_at"); places != j.end() && places->is_array()) {
    for (const auto& place : *places) {
      if (place.is_string()) r.interrupted_at.push_back(place.get<std::string>());
    }
  }
  return r;
}

AttemptResult attempt_result_of(const launch::RunResult& result, double started_at) {
  AttemptResult out;
  out.status = std::string(launch::run_status_name(result.status));
  out.started_at = started_at;
  out.duration_s = launch::seconds_of(result.duration);
  for (const launch::RankOutcome& rank : result.ranks) {
    out.ranks.push_back(launch::ending_of(rank, result));
  }
  out.interrupted_at = result.interrupted_at;
  return out;
}

}  // namespace bigmac::report
