#include "diagnose/diagnosis.h"

#include <fmt/format.h>

#include "core/printable.h"
#include "diagnose/rank_set.h"

namespace bigmac::diagnose {
namespace {

std::string location_of(const Evidence& e) {
  std::string where = e.rank >= 0 ? fmt::format("rank {}", e.rank) : std::string("rank ?");
  if (!e.file.empty()) {
    const std::string file = printable(e.file);
    where += e.line > 0 ? fmt::format(", {}:{}", file, e.line) : fmt::format(", {}", file);
  }
  return where;
}

// Long lines (a 2 KiB NCCL dump) are cut in the text form; JSON keeps them whole. What a log
// holds is printed with its control characters escaped (core/printable.h).
std::string shortened(const std::string& text) {
  constexpr std::size_t kMax = 300;
  return printable(text.size() <= kMax ? text : text.substr(0, kMax)) +
         (text.size() <= kMax ? "" : " [...]");
}

}  // namespace

void print_diagnosis(std::ostream& out, const Diagnosis& d, int index) {
  const std::string number = index > 0 ? fmt::format("{}. ", index) : std::string();
  out << fmt::format("{}[{}] {}\n", number, d.klass, printable(d.symptom));
  if (!d.evidence.empty()) {
    out << "   evidence:\n";
    for (const Evidence& e : d.evidence) {
      // A message joined from several lines prints them one under the other.
      std::string_view text = e.text;
      const std::size_t nl = text.find('\n');
      out << fmt::format("     {}: {}\n", location_of(e),
                         shortened(std::string(text.substr(0, nl))));
      while (!text.empty() && text.find('\n') != std::string_view::npos) {
        text.remove_prefix(text.find('\n') + 1);
        out << fmt::format("       | {}\n",
                           shortened(std::string(text.substr(0, text.find('\n')))));
      }
    }
    if (d.matches > static_cast<std::int64_t>(d.evidence.size())) {
      out << fmt::format("     ... {} more matching lines\n",
                         d.matches - static_cast<std::int64_t>(d.evidence.size()));
    }
  }
  if (!d.raised_at.empty()) out << fmt::format("   raised at: {}\n", printable(d.raised_at));
  if (!d.while_handling.empty())
    out << fmt::format("   while handling: {}\n", shortened(d.while_handling));
  if (d.ranks.size() > 1 || d.first_rank >= 0 || !d.nodes.empty()) {
    std::string line = fmt::format("   ranks: {} ({})", d.ranks.size(), format_ranges(d.ranks));
    if (d.first_rank >= 0) {
      line += fmt::format("; first: rank {} ({})", d.first_rank,
                          d.first_by == "time" ? "earliest timestamp" : "first in the log");
    }
    if (!d.nodes.empty()) line += fmt::format("; nodes: {}", fmt::join(d.nodes, ", "));
    out << line << '\n';
  }
  if (!d.explains.empty()) {
    out << fmt::format("   explains the failed check{}: {}\n", d.explains.size() > 1 ? "s" : "",
                       fmt::join(d.explains, ", "));
  }
  out << fmt::format("   cause: {}\n", printable(d.cause));
  out << fmt::format("   fix:   {}\n", printable(d.fix));
  out << fmt::format("   go back to gate: {}   (confidence {:.2f}, {})\n", d.gate, d.confidence,
                     d.id);
}

void print_diagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses) {
  if (diagnoses.empty()) {
    out << "no diagnosis: nothing in these logs matches the catalog\n";
    return;
  }
  out << fmt::format("{} diagnos{}, most likely root cause first:\n\n", diagnoses.size(),
                     diagnoses.size() == 1 ? "is" : "es");
  int index = 1;
  for (const Diagnosis& d : diagnoses) {
    print_diagnosis(out, d, index++);
    out << '\n';
  }
}

nlohmann::json to_json(const Diagnosis& d) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const Evidence& e : d.evidence) {
    nlohmann::json item = {{"rank", e.rank}, {"text", e.text}};
    if (!e.file.empty()) item["file"] = e.file;
    if (e.line > 0) item["line"] = e.line;
    if (e.t > 0) item["t"] = e.t;
    if (e.lines > 1) item["lines"] = e.lines;
    evidence.push_back(std::move(item));
  }
  nlohmann::json out = {{"id", d.id},
                        {"class", d.klass},
                        {"symptom", d.symptom},
                        {"cause", d.cause},
                        {"fix", d.fix},
                        {"gate", d.gate},
                        {"confidence", d.confidence},
                        {"specificity", d.specificity},
                        {"matches", d.matches},
                        {"evidence", std::move(evidence)}};
  if (d.failed_rank >= 0) out["failed_rank"] = d.failed_rank;
  if (!d.ranks.empty()) {
    out["ranks"] = format_ranges(d.ranks, d.ranks.size());
    out["rank_count"] = d.ranks.size();
  }
  if (d.first_rank >= 0) out["first_rank"] = {{"rank", d.first_rank}, {"by", d.first_by}};
  if (!d.nodes.empty()) out["nodes"] = d.nodes;
  if (!d.explains.empty()) out["explains"] = d.explains;
  if (!d.raised_at.empty()) out["raised_at"] = d.raised_at;
  if (!d.while_handling.empty()) out["while_handling"] = d.while_handling;
  if (!d.consequence_of.empty()) out["consequence_of"] = d.consequence_of;
  return out;
}

nlohmann::json to_json(const std::vector<Diagnosis>& diagnoses) {
  nlohmann::json list = nlohmann::json::array();
  for (const Diagnosis& d : diagnoses) list.push_back(to_json(d));
  return list;
}

}  // namespace bigmac::diagnose
