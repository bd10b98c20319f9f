#include "run/run_state.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/checked_integer.h"
#include "core/json_file.h"
#include "gates/gate_spec.h"

namespace bigmac::run {
namespace {

constexpr GateStatus kStatuses[] = {
    GateStatus::kPending,     GateStatus::kRunning, GateStatus::kPassed,
    GateStatus::kFailed,      GateStatus::kSkipped, GateStatus::kInvalidated,
    GateStatus::kInterrupted, GateStatus::kAborted, GateStatus::kNotApplicable};

Error state_error(const std::string& path, std::string key, std::string message) {
  Error e = make_error(ErrorKind::kInput, std::move(message),
                       "the run state is damaged; start a new run with run-all");
  e.file = path;
  e.key = std::move(key);
  return e;
}

}  // namespace

std::string_view status_name(GateStatus status) {
  switch (status) {
    case GateStatus::kPending:
      return "pending";
    case GateStatus::kRunning:
      return "running";
    case GateStatus::kPassed:
      return "passed";
    case GateStatus::kFailed:
      return "failed";
    case GateStatus::kSkipped:
      return "skipped";
    case GateStatus::kInvalidated:
      return "invalidated";
    case GateStatus::kInterrupted:
      return "interrupted";
    case GateStatus::kAborted:
      return "aborted";
    case GateStatus::kNotApplicable:
      return "not applicable";
  }
  return "?";
}

std::string_view phase_name(RunPhase phase) {
  switch (phase) {
    case RunPhase::kReady:
      return "ready";
    case RunPhase::kRunning:
      return "running";
    case RunPhase::kPassed:
      return "passed";
    case RunPhase::kFailed:
      return "failed";
    case RunPhase::kInterrupted:
      return "interrupted";
    case RunPhase::kInfrastructure:
      return "infrastructure";
  }
  return "?";
}

RunState RunState::fresh(std::string run_id, const std::vector<std::string>& gate_ids) {
  RunState s;
  s.run_id = std::move(run_id);
  for (const std::string& id : gate_ids)
    s.gates.push_back(GateRecord{id, GateStatus::kPending, 0, {}, {}, {}, {}});
  s.first = 0;
  s.last = gate_ids.empty() ? 0 : gate_ids.size() - 1;
  return s;
}

GateRecord* RunState::find(std::string_view id) {
  auto it =
      std::find_if(gates.begin(), gates.end(), [&](const GateRecord& g) { return g.id == id; });
  return it == gates.end() ? nullptr : &*it;
}

const GateRecord* RunState::find(std::string_view id) const {
  return const_cast<RunState*>(this)->find(id);
}

RunPhase RunState::phase() const {
  auto any = [&](GateStatus status, bool selected_only) {
    for (std::size_t i = 0; i < gates.size(); ++i) {
      if (selected_only && (i < first || i > last)) continue;
      if (gates[i].status == status) return true;
    }
    return false;
  };
  if (any(GateStatus::kRunning, false)) return RunPhase::kRunning;
  if (any(GateStatus::kInterrupted, true)) return RunPhase::kInterrupted;
  if (any(GateStatus::kAborted, true)) return RunPhase::kInfrastructure;
  if (any(GateStatus::kFailed, true)) return RunPhase::kFailed;
  bool all_passed = !gates.empty();
  for (std::size_t i = first; i <= last && i < gates.size(); ++i) {
    all_passed &=
        gates[i].status == GateStatus::kPassed || gates[i].status == GateStatus::kNotApplicable;
  }
  return all_passed ? RunPhase::kPassed : RunPhase::kReady;
}

std::ptrdiff_t RunState::index_of(std::string_view id) const {
  for (std::size_t i = 0; i < gates.size(); ++i) {
    if (gates[i].id == id) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

nlohmann::json to_json(const RunState& s) {
  nlohmann::json gates = nlohmann::json::array();
  for (const GateRecord& g : s.gates) {
    gates.push_back({{"id", g.id},
                     {"status", status_name(g.status)},
                     {"attempts", g.attempts},
                     {"note", g.note},
                     {"failed_check", g.failed_check},
                     {"route_back", g.route_back},
                     {"inputs",
                      {{"config", g.inputs.config},
                       {"trainer", g.inputs.trainer},
                       {"baseline", g.inputs.baseline}}}});
  }
  return {{"format", "bigmac-run-state/1"},
          {"run_id", s.run_id},
          {"phase", phase_name(s.phase())},  // for readers; derived again when loaded
          {"first", s.gates.empty() ? "" : s.gates[std::min(s.first, s.gates.size() - 1)].id},
          {"last", s.gates.empty() ? "" : s.gates[std::min(s.last, s.gates.size() - 1)].id},
          {"current", s.current},
          {"message", s.message},
          {"gates", gates},
          {"history", s.history}};
}

Expected<RunState> run_state_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || j.value("format", "") != "bigmac-run-state/1") {
    return tl::unexpected(state_error(path, "format", "not a bigmac run state"));
  }
  RunState s;
  try {
    s.run_id = j.value("run_id", "");
    s.current = j.value("current", "");
    s.message = j.value("message", "");
    s.history = j.value("history", std::vector<std::string>{});
    for (const auto& g : j.at("gates")) {
      GateRecord r;
      r.id = g.at("id").get<std::string>();
      if (!gates::valid_gate_id(r.id) || s.find(r.id) != nullptr) {
        return tl::unexpected(state_error(
            path, "gates",
            fmt::format("gate id \"{}\" is {}", r.id,
                        s.find(r.id) ? "there twice" : "not a plain name (letters, digits, _ -)")));
      }
      const std::string status = g.value("status", "");
      auto st = std::find_if(std::begin(kStatuses), std::end(kStatuses),
                             [&](GateStatus x) { return status_name(x) == status; });
      if (st == std::end(kStatuses)) {
        return tl::unexpected(
            state_error(path, "gates." + r.id + ".status", "unknown status '" + status + "'"));
      }
      r.status = *st;
      const auto attempts = json_integer(g.value("attempts", nlohmann::json(0)));
      if (!attempts || *attempts < 0 || !narrow<int>(*attempts)) {
        return tl::unexpected(
            state_error(path, "gates." + r.id + ".attempts",
                        fmt::format("expected a count from 0 up, found {}",
                                    json_text(g.value("attempts", nlohmann::json())))));
      }
      r.attempts = static_cast<int>(*attempts);
      r.note = g.value("note", "");
      r.failed_check = g.value("failed_check", "");
      r.route_back = g.value("route_back", "");
      if (g.contains("inputs")) {
        const auto& in = g["inputs"];
        r.inputs.config = in.value("config", std::map<std::string, std::string>{});
        r.inputs.trainer = in.value("trainer", "");
        r.inputs.baseline = in.value("baseline", "");
      }
      s.gates.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    return tl::unexpected(state_error(path, "gates", e.what()));
  }
  const auto first = s.index_of(j.value("first", ""));
  const auto last = s.index_of(j.value("last", ""));
  s.first = first < 0 ? 0 : static_cast<std::size_t>(first);
  s.last = last < 0 ? (s.gates.empty() ? 0 : s.gates.size() - 1) : static_cast<std::size_t>(last);
  return s;
}

}  // namespace bigmac::run
