#include "audit/audit_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/printable.h"

namespace bigmac::audit {
namespace {

constexpr std::size_t kWrittenWidth = 64;

std::string written_text(const Place& p) {
  std::string text = p.where();
  if (p.kind == PlaceKind::kWrite) {
    text += fmt::format(" = {} [{}, {}]", p.value ? p.value->text : "?",
                        config::layer_name(p.layer), source_name(p.source));
  } else {
    text += fmt::format(" {} [{}, derived]", p.note, config::layer_name(p.layer));
  }
  if (p.kind == PlaceKind::kWrite && !p.note.empty()) text += " (" + p.note + ")";
  // File names, values and notes are the project's text: a newline in a file name would split
  // the row, an escape sequence would reach the terminal.
  return printable(text);
}

/// Reads in one file with the same note share a row: "train.py:61,103,108 (note)".
std::vector<std::string> read_rows(const std::vector<const Place*>& reads) {
  std::vector<std::pair<std::string, std::string>> keys;  // (file, note), first seen first
  std::vector<std::string> lines;
  for (const Place* p : reads) {
    auto it = std::find(keys.begin(), keys.end(), std::make_pair(p->file, p->note));
    if (it == keys.end()) {
      keys.emplace_back(p->file, p->note);
      lines.push_back(std::to_string(p->line));
    } else {
      lines[static_cast<std::size_t>(it - keys.begin())] += "," + std::to_string(p->line);
    }
  }
  std::vector<std::string> rows;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    rows.push_back(printable(keys[i].first + ":" + lines[i] +
                             (keys[i].second.empty() ? "" : " (" + keys[i].second + ")")));
  }
  return rows;
}

std::string table(const ProjectAudit& audit) {
  std::string out = fmt::format("{:<28}  {:<8}  {:<{}}  {}\n", "SETTING", "LAYER",
                                "WRITTEN (file:line = value [layer there, source])", kWrittenWidth,
                                "READ (file:line)");
  for (const SettingInfo& s : setting_catalog()) {
    std::vector<std::string> written;
    std::vector<const Place*> reads;
    for (const Place& p : audit.facts.places) {
      if (p.setting != s.setting) continue;
      if (p.kind == PlaceKind::kRead) {
        reads.push_back(&p);
      } else {
        written.push_back(written_text(p));
      }
    }
    const std::vector<std::string> read = read_rows(reads);
    if (written.empty() && read.empty()) continue;
    if (written.empty()) written.push_back(s.derived ? "- (derived)" : "-");
    const std::size_t rows = std::max(written.size(), read.size());
    for (std::size_t i = 0; i < rows; ++i) {
      const std::string w = i < written.size() ? written[i] : "";
      const std::string r = i < read.size() ? read[i] : "";
      std::string line =
          fmt::format("{:<28}  {:<8}  {:<{}}  {}", i == 0 ? s.name : "",
                      i == 0 ? config::layer_name(s.layer) : "", w, kWrittenWidth, r);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

std::string audit_text(const ProjectAudit& audit) {
  std::string out;
  std::string roots;
  for (const RunGroup& run : audit.runs) {
    if (run.files.size() > 1) roots += (roots.empty() ? "" : ", ") + printable(run.root);
  }
  out += fmt::format("Parallel settings in {} file{}{}\n\n", audit.facts.files.size(),
                     audit.facts.files.size() == 1 ? "" : "s",
                     roots.empty() ? "" : " (runs started from " + roots + ")");
  out += table(audit);
  if (!audit.findings.empty()) {
    out += fmt::format("\nFindings ({}):\n", audit.findings.size());
    for (const Finding& f : audit.findings) {
      out += fmt::format("{}: {}: {}\n    fix: {}\n", printable(f.where()), finding_code(f.kind),
                         printable(f.message), printable(f.fix));
    }
  }
  if (!audit.unchecked.empty()) {
    out += "\nNot checked:\n";
    for (const std::string& u : audit.unchecked) out += "  - " + printable(u) + "\n";
  }
  out += audit.findings.empty()
             ? fmt::format("\naudit: no finding in {} files\n", audit.facts.files.size())
             : fmt::format("\naudit: {} finding{} in {} files\n", audit.findings.size(),
                           audit.findings.size() == 1 ? "" : "s", audit.facts.files.size());
  return out;
}

nlohmann::json audit_json(const ProjectAudit& audit) {
  using nlohmann::json;
  json settings = json::array();
  for (const SettingInfo& s : setting_catalog()) {
    json places = json::array();
    for (const Place& p : audit.facts.places) {
      if (p.setting != s.setting) continue;
      json place = {{"file", p.file},
                    {"line", p.line},
                    {"kind", p.kind == PlaceKind::kWrite     ? "write"
                             : p.kind == PlaceKind::kDerived ? "derived"
                                                             : "read"},
                    {"layer", config::layer_name(p.layer)},
                    {"spelling", p.spelling},
                    {"note", p.note}};
      if (p.kind == PlaceKind::kWrite) place["source"] = source_name(p.source);
      if (p.value) place["value"] = p.value->text;
      places.push_back(std::move(place));
    }
    if (places.empty()) continue;
    settings.push_back({{"setting", s.name},
                        {"layer", config::layer_name(s.layer)},
                        {"derived", s.derived},
                        {"places", std::move(places)}});
  }
  json findings = json::array();
  for (const Finding& f : audit.findings) {
    findings.push_back({{"code", finding_code(f.kind)},
                        {"file", f.file},
                        {"line", f.line},
                        {"setting", f.setting ? json(info(*f.setting).name) : json()},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  json runs = json::array();
  for (const RunGroup& run : audit.runs) runs.push_back({{"root", run.root}, {"files", run.files}});
  return {{"files", audit.facts.files},
          {"runs", std::move(runs)},
          {"settings", std::move(settings)},
          {"findings", std::move(findings)},
          {"unchecked", audit.unchecked}};
}

}  // namespace bigmac::audit
