#include "run/run_transition.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace bigmac::run {
namespace {

// Applies one status change and records it, so every transition is logged the same way (the
// loop keeps the lines as the state's history).
void move(std::vector<std::string>& log, GateRecord& g, GateStatus to, const std::string& why) {
  std::string line = fmt::format("{}: {} -> {}", g.id, status_name(g.status), status_name(to));
  if (!why.empty()) line += " (" + why + ")";
  g.status = to;
  log.push_back(std::move(line));
}

// Whether a gate inside the selection still has to run.
bool needs_run(const GateRecord& g) {
  switch (g.status) {
    case GateStatus::kPassed:
    case GateStatus::kNotApplicable:
      return false;
    case GateStatus::kPending:
    case GateStatus::kRunning:  // the orchestrator died mid-gate: its outcome is unknown
    case GateStatus::kFailed:
    case GateStatus::kSkipped:
    case GateStatus::kInvalidated:
    case GateStatus::kInterrupted:
    case GateStatus::kAborted:
      return true;
  }
  return true;
}

// Invalidates passed gates whose inputs changed, and every passed gate after the first one,
// since later gates were judged against its output (the baseline, the route).
void invalidate_stale(RunState& s, std::vector<std::string>& log,
                      const std::map<std::string, gates::GateInputs>& now) {
  std::string cascade;
  for (GateRecord& g : s.gates) {
    if (g.status != GateStatus::kPassed) continue;
    if (!cascade.empty()) {
      move(log, g, GateStatus::kInvalidated, "gate " + cascade + " reruns first");
      continue;
    }
    auto it = now.find(g.id);
    if (it == now.end() || g.inputs.empty()) continue;
    const std::string why = g.inputs.difference(it->second);
    if (why.empty()) continue;
    move(log, g, GateStatus::kInvalidated, why);
    g.note = "invalidated: " + why;
    cascade = g.id;
  }
}

// The next selected gate that must run: launch it, or finish.
Decision advance(RunState s, std::vector<std::string> log) {
  for (std::size_t i = s.first; i <= s.last && i < s.gates.size(); ++i) {
    GateRecord& g = s.gates[i];
    if (!needs_run(g)) continue;
    if (g.status == GateStatus::kRunning) g.note = "was running when the orchestrator stopped";
    move(log, g, GateStatus::kRunning,
         g.attempts > 0 ? fmt::format("attempt {}", g.attempts + 1) : "");
    ++g.attempts;
    s.current = g.id;
    return Decision{std::move(s), LaunchGate{g.id}, std::move(log)};
  }
  std::size_t passed = 0;
  std::vector<std::string> not_applicable;
  for (std::size_t i = s.first; i <= s.last && i < s.gates.size(); ++i) {
    if (s.gates[i].status == GateStatus::kNotApplicable) {
      not_applicable.push_back(s.gates[i].id);
    } else {
      ++passed;
    }
  }
  s.message = fmt::format("{} gate{} passed", passed, passed == 1 ? "" : "s");
  if (!not_applicable.empty()) {
    s.message += fmt::format(", {} not applicable ({})", not_applicable.size(),
                             fmt::join(not_applicable, ", "));
  }
  std::string summary = s.message;
  return Decision{std::move(s), Finish{std::move(summary)}, std::move(log)};
}

// Marks the gates that do not apply to the layout as it is configured now, and gives back to
// the run those that apply again (the configuration changed between a run and its resume).
void mark_applicability(RunState& s, std::vector<std::string>& log,
                        const std::map<std::string, std::string>& not_applicable) {
  for (GateRecord& g : s.gates) {
    auto it = not_applicable.find(g.id);
    if (it != not_applicable.end()) {
      g.note = it->second;
      if (g.status != GateStatus::kNotApplicable) {
        move(log, g, GateStatus::kNotApplicable, it->second);
      }
    } else if (g.status == GateStatus::kNotApplicable) {
      g.note.clear();
      move(log, g, GateStatus::kPending, "applies to the layout configured now");
    }
  }
}

Decision start(RunState s, std::size_t first, std::size_t last,
               const std::map<std::string, gates::GateInputs>& inputs,
               const std::map<std::string, std::string>& not_applicable) {
  std::vector<std::string> log;
  mark_applicability(s, log, not_applicable);
  invalidate_stale(s, log, inputs);
  s.first = first;
  s.last = last;
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    GateRecord& g = s.gates[i];
    const bool selected = i >= first && i <= last;
    if (!selected && g.status == GateStatus::kPending && i > last)
      move(log, g, GateStatus::kSkipped, "outside the selection");
    if (selected && g.status == GateStatus::kSkipped)
      move(log, g, GateStatus::kPending, "selected");
  }
  bool any_applies = false;
  for (std::size_t i = first; i <= last && i < s.gates.size(); ++i)
    any_applies |= s.gates[i].status != GateStatus::kNotApplicable;
  if (!any_applies) {
    const GateRecord& g = s.gates[first];
    const std::string message =
        first == last
            ? fmt::format("gate {} does not apply: {}", g.id, g.note)
            : fmt::format("no gate from {} to {} applies: {}", g.id, s.gates[last].id, g.note);
    s.message = message;
    return Decision{std::move(s), Refuse{message}, std::move(log)};
  }
  std::vector<std::string> missing;
  const GateRecord* first_failed = nullptr;
  for (std::size_t i = 0; i < first && i < s.gates.size(); ++i) {
    const GateRecord& g = s.gates[i];
    if (g.status == GateStatus::kPassed || g.status == GateStatus::kNotApplicable) continue;
    if (g.status == GateStatus::kFailed) {
      missing.push_back(g.id + " failed");
      if (first_failed == nullptr) first_failed = &g;
    } else {
      missing.push_back(fmt::format("{} is {}", g.id, status_name(g.status)));
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    // A failed gate is fixed and rerun in this run; gates never run are run first.
    const std::string hint =
        first_failed != nullptr
            ? fmt::format("fix it and rerun it with `run {}`, or `resume` this run",
                          first_failed->id)
            : fmt::format("run them first, e.g. run-all --until {}", s.gates[first - 1].id);
    const std::string message =
        fmt::format("gate {} needs every earlier applicable gate passed in this run: {} ({})",
                    s.gates[first].id, list, hint);
    s.message = message;
    return Decision{std::move(s), Refuse{message}, std::move(log)};
  }
  return advance(std::move(s), std::move(log));
}

Refuse unknown_gate(const RunState& s, const std::string& id) {
  std::string ids;
  for (const GateRecord& g : s.gates) ids += (ids.empty() ? "" : ", ") + g.id;
  return Refuse{fmt::format("unknown gate '{}' (gates: {})", id, ids)};
}

}  // namespace

std::optional<std::string> selection_out_of_order(const std::vector<std::string>& ids,
                                                  const std::string& first,
                                                  const std::string& last) {
  const auto first_at = std::find(ids.begin(), ids.end(), first);
  const auto last_at = std::find(ids.begin(), ids.end(), last);
  if (first_at == ids.end() || last_at == ids.end() || first_at <= last_at) return std::nullopt;
  return fmt::format("--from {} comes after --until {}", first, last);
}

Decision decide(const RunState& state, const Observation& observation) {
  RunState s = state;
  std::vector<std::string> log;
  if (s.gates.empty()) return Decision{std::move(s), Refuse{"no gates to run"}, {}};
  return std::visit(
      [&](const auto& o) -> Decision {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, Begin>) {
          const auto first = o.first.empty() ? 0 : s.index_of(o.first);
          const auto last =
              o.last.empty() ? static_cast<std::ptrdiff_t>(s.gates.size()) - 1 : s.index_of(o.last);
          if (first < 0) return Decision{std::move(s), unknown_gate(s, o.first), {}};
          if (last < 0) return Decision{std::move(s), unknown_gate(s, o.last), {}};
          std::vector<std::string> ids;
          for (const GateRecord& g : s.gates) ids.push_back(g.id);
          if (auto why = selection_out_of_order(ids, o.first, o.last)) {
            return Decision{std::move(s), Refuse{*why}, {}};
          }
          return start(std::move(s), static_cast<std::size_t>(first),
                       static_cast<std::size_t>(last), o.inputs, o.not_applicable);
        } else if constexpr (std::is_same_v<T, Resume>) {
          const std::size_t first = s.first, last = s.last;
          return start(std::move(s), first, last, o.inputs, o.not_applicable);
        } else if constexpr (std::is_same_v<T, GateFinished>) {
          GateRecord* g = s.find(o.gate);
          if (!g || g->status != GateStatus::kRunning) {
            return Decision{
                std::move(s), StopWithError{o.gate, "a gate finished that was not running"}, {}};
          }
          g->inputs = o.inputs;
          g->note = o.summary;
          if (o.passed) {
            g->failed_check.clear();
            g->route_back.clear();
            move(log, *g, GateStatus::kPassed, "");
            return advance(std::move(s), std::move(log));
          }
          g->failed_check = o.failed_check;
          g->route_back = o.route_back;
          move(log, *g, GateStatus::kFailed, o.failed_check);
          s.message = o.summary;
          return Decision{std::move(s),
                          StopWithFailure{o.gate, o.failed_check, o.route_back, o.summary},
                          std::move(log)};
        } else if constexpr (std::is_same_v<T, GateAborted>) {
          GateRecord* g = s.find(o.gate);
          if (g && g->status == GateStatus::kRunning) {
            g->note = "could not run: " + o.message;
            move(log, *g, GateStatus::kAborted, "could not run");
          }
          s.message = o.message;
          return Decision{std::move(s), StopWithError{o.gate, o.message}, std::move(log)};
        } else if constexpr (std::is_same_v<T, Interrupted>) {
          std::string gate;
          for (GateRecord& g : s.gates) {
            if (g.status != GateStatus::kRunning) continue;
            gate = g.id;
            g.note = "interrupted";
            move(log, g, GateStatus::kInterrupted, "");
          }
          s.message = gate.empty() ? "interrupted" : "interrupted during gate " + gate;
          return Decision{std::move(s), StopInterrupted{gate}, std::move(log)};
        } else {
          static_assert(std::is_same_v<T, Invalidate>);
          GateRecord* g = s.find(o.gate);
          if (!g) return Decision{std::move(s), unknown_gate(s, o.gate), {}};
          if (g->status == GateStatus::kPassed) {
            g->note = "invalidated: " + o.reason;
            move(log, *g, GateStatus::kInvalidated, o.reason);
          }
          return Decision{std::move(s), Continue{}, std::move(log)};
        }
      },
      observation);
}

namespace {

// One overload per action and no catch-all: an action added to the variant without an exit
// code does not compile.
struct ExitCodeOf {
  ExitCode operator()(const LaunchGate&) const { return ExitCode::kOk; }
  ExitCode operator()(const StopWithFailure&) const { return ExitCode::kGateFailed; }
  ExitCode operator()(const StopInterrupted&) const { return ExitCode::kInterrupted; }
  ExitCode operator()(const StopWithError&) const { return ExitCode::kInfrastructure; }
  ExitCode operator()(const Refuse&) const { return ExitCode::kBadInput; }
  ExitCode operator()(const Finish&) const { return ExitCode::kOk; }
  ExitCode operator()(const Continue&) const { return ExitCode::kOk; }
};

}  // namespace

ExitCode exit_code_of(const Action& action) { return std::visit(ExitCodeOf{}, action); }

}  // namespace bigmac::run
