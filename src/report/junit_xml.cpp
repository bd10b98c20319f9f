#include "report/junit_xml.h"

#include <fmt/format.h>

#include <ctime>

#include "report/diagnosis_text.h"
#include "report/markup_text.h"
#include "report/verdict_card.h"

namespace bigmac::report {
namespace {

struct Case {
  std::string name;
  enum class Kind { kPass, kFailure, kError, kSkipped } kind = Kind::kPass;
  std::string message;
  std::string type;
  std::string body;
};

/// ISO 8601 without a zone, as the JUnit schema's xs:dateTime timestamp expects.
std::string timestamp(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  return buffer;
}

std::string diagnoses_text(const GateReport& gate) {
  std::string out;
  for (std::size_t i = 0; i < gate.diagnoses.size(); ++i) {
    out += fmt::format("\nDiagnosis {}/{} ({}):\n", i + 1, gate.diagnoses.size(),
                       gate.diagnoses[i].id);
    out += diagnosis_text(gate.diagnoses[i]);
  }
  return out;
}

std::vector<Case> cases_of(const GateReport& gate) {
  using run::GateStatus;
  std::vector<Case> cases;
  const GateStatus status = gate.record.status;
  if (!gate.verdict) {
    Case c{"gate", Case::Kind::kSkipped, {}, {}, {}};
    if (status == GateStatus::kFailed || status == GateStatus::kRunning ||
        status == GateStatus::kInterrupted || status == GateStatus::kAborted ||
        (status == GateStatus::kPending && gate.record.attempts > 0)) {
      c.kind = Case::Kind::kError;
      c.type = "no_verdict";
      c.message = gate.record.note.empty() ? "the gate left no verdict" : gate.record.note;
      for (const auto& n : gate.notes) c.body += n + "\n";
      c.body += diagnoses_text(gate);
    } else if (status == GateStatus::kPassed) {
      c.kind = Case::Kind::kPass;
    } else if (status == GateStatus::kNotApplicable) {
      c.message = "not applicable: " + gate.record.note;
    } else {
      c.message = fmt::format("gate {}", run::status_name(status));
    }
    cases.push_back(std::move(c));
    return cases;
  }
  // A regression against the stored baseline leads every failure of the gate, so the CI page
  // says it in one line whichever case it shows.
  const std::string regression = regression_headline(gate);
  // The first failed check carries the gate's diagnosis: its class is the failure's type, which
  // CI pages group by. A later failed check of the gate is marked as coming after it: the
  // diagnosis explains the first, and the others are often its consequences (a crashed rank
  // also leaves steps missing).
  const gates::CheckResult* first = gate.verdict->first_failure();
  const std::string klass = gate.diagnoses.empty() ? std::string() : gate.diagnoses.front().klass;
  for (const auto& r : gate.verdict->results) {
    Case c{r.name, Case::Kind::kPass, r.message, {}, {}};
    if (r.passed && !r.warning.empty()) c.body = "warning: " + r.warning + "\n";
    if (!r.passed) {
      if (!regression.empty()) c.message = regression + ": " + r.message;
      c.kind = Case::Kind::kFailure;
      if (&r != first && first != nullptr) {
        c.type = "after:" + first->name;
        c.message =
            fmt::format("after {} failed (its diagnosis comes first): {}", first->name, c.message);
      } else if (!klass.empty()) {
        c.type = klass;
      } else {
        c.type = r.route_back.empty() ? "check_failed" : "route_back:" + r.route_back;
      }
      c.body = r.message + "\n";
      for (const auto& e : r.evidence) {
        c.body += fmt::format("  rank {} line {}: {}\n", e.rank, e.line, e.text);
      }
      c.body += diagnoses_text(gate);
    }
    cases.push_back(std::move(c));
  }
  // A check the logs cannot answer: skipped with what to log, or a failure when required.
  for (const gates::UnobservableFinding& u : gate.verdict->unobservable) {
    for (const std::string& check : u.checks) {
      if (u.is_required(check)) {
        cases.push_back({check, Case::Kind::kFailure, u.text(), "unobservable:" + u.field,
                         "a required check could not be made: " + u.text() + "\n"});
      } else {
        cases.push_back({check, Case::Kind::kSkipped, u.text(), {}, {}});
      }
    }
  }
  for (const auto& reason : gate.verdict->not_run) {
    const auto colon = reason.find(':');
    cases.push_back({reason.substr(0, colon), Case::Kind::kSkipped, reason, {}, {}});
  }
  return cases;
}

}  // namespace

std::string render_junit(const ReportInput& input) {
  std::string suites;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double total_time = 0;
  for (const GateReport& gate : input.gates) {
    const auto cases = cases_of(gate);
    int f = 0, e = 0, s = 0;
    std::string body;
    const std::string classname = "bigmac." + gate.record.id;
    for (const Case& c : cases) {
      body += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"0\"",
                          escape_xml(c.name), escape_xml(classname));
      switch (c.kind) {
        case Case::Kind::kPass:
          if (c.body.empty()) {
            body += "/>\n";
            continue;
          }
          body += ">\n      <system-out>" + escape_xml(c.body) + "</system-out>\n";  // a warning
          break;
        case Case::Kind::kFailure:
          ++f;
          body += fmt::format(">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                              escape_xml(c.message), escape_xml(c.type), escape_xml(c.body));
          break;
        case Case::Kind::kError:
          ++e;
          body += fmt::format(">\n      <error message=\"{}\" type=\"{}\">{}</error>\n",
                              escape_xml(c.message), escape_xml(c.type), escape_xml(c.body));
          break;
        case Case::Kind::kSkipped:
          ++s;
          body += fmt::format(">\n      <skipped message=\"{}\"/>\n", escape_xml(c.message));
          break;
      }
      body += "    </testcase>\n";
    }
    const double time = gate.duration_s();
    std::string attributes = fmt::format(
        "name=\"{:02}-{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\"",
        gate.index + 1, escape_xml(gate.record.id), cases.size(), f, e, s, time);
    if (gate.started_at() > 0) attributes += " timestamp=\"" + timestamp(gate.started_at()) + "\"";
    suites += "  <testsuite " + attributes + ">\n";
    suites += fmt::format(
        "    <properties>\n      <property name=\"status\" value=\"{}\"/>\n"
        "      <property name=\"attempts\" value=\"{}\"/>\n"
        "      <property name=\"attempt_dir\" value=\"{}\"/>\n    </properties>\n",
        run::status_name(gate.record.status), gate.record.attempts, escape_xml(gate.attempt_dir));
    suites += body;
    if (!gate.notes.empty() || !gate.record.note.empty()) {
      std::string out = gate.record.note + "\n";
      for (const auto& n : gate.notes) out += n + "\n";
      suites += "    <system-out>" + escape_xml(out) + "</system-out>\n";
    }
    suites += "  </testsuite>\n";
    tests += static_cast<int>(cases.size());
    failures += f;
    errors += e;
    skipped += s;
    total_time += time;
  }
  return fmt::format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<testsuites name=\"bigmac-bringup {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
             "skipped=\"{}\" time=\"{:.3f}\">\n",
             escape_xml(input.state.run_id), tests, failures, errors, skipped, total_time) +
         suites + "</testsuites>\n";
}

}  // namespace bigmac::report
