#include "diagnose/log_diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "core/exit_code.h"
#include "core/json_file.h"
#include "core/printable.h"
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
std::vector<launch::RankEnding> attempt_exit_errors(const std::vector<std::string>& paths) {
  std::vector<launch::RankEnding> errors;
  if (paths.size() != 1) return errors;
  const std::filesystem::path result = std::filesystem::path(paths.front()) / "result.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(result, ec)) return errors;
  auto doc = read_json_file(result.string());
  if (!doc || !doc->is_object()) return errors;
  for (const auto& rank : doc->value("ranks", nlohmann::json::array())) {
    if (!rank.is_object() || !rank.contains("error_lines") || !rank["error_lines"].is_array())
      continue;
    launch::RankEnding ending;
    ending.rank = rank.value("rank", -1);
    for (const auto& line : rank["error_lines"]) {
      if (line.is_string()) ending.error_lines.push_back(line.get<std::string>());
    }
    if (!ending.error_lines.empty()) errors.push_back(std::move(ending));
  }
  return errors;
}

// What `diagnose` read, said when nothing matched: never a cause it did not find, and the
// facts that would decide (which log, which variable).
struct ReadSummary {
  std::size_t files = 0;
  std::int64_t lines = 0;
  std::map<int, std::pair<std::int64_t, std::int64_t>> steps;  // rank -> first, last step
  std::optional<Evidence> first_error_like;
  std::vector<Evidence> error_like_lines;  ///< the first few, over every group of files
  std::optional<RaisedError> first_raised;
  std::string first_raised_file;
  bool nccl_info = false;

  void add(const TextScan::Read& read, const std::vector<logs::RankLog>& logs) {
    lines += read.lines;
    nccl_info = nccl_info || read.nccl_info;
    if (read.error_like && !first_error_like) first_error_like = read.first_error_like;
    for (const Evidence& e : read.error_like_lines) {
      if (error_like_lines.size() < TextScan::kErrorLikeKept) error_like_lines.push_back(e);
    }
    if (read.first_raised && !first_raised) {
      first_raised = read.first_raised;
      first_raised_file = read.first_raised_file;
    }
    for (const logs::RankLog& log : logs) {
      for (const logs::StepRecord& step : log.steps) {
        auto [it, fresh] = steps.try_emplace(log.rank, step.global_step, step.global_step);
        it->second.first = std::min(it->second.first, step.global_step);
        it->second.second = std::max(it->second.second, step.global_step);
      }
    }
  }

  std::string what_was_read() const {
    std::string text = fmt::format("read: {} file{}, {} text line{}", files, files == 1 ? "" : "s",
                                   lines, lines == 1 ? "" : "s");
    if (steps.empty()) return text + "; no step records";
    for (const auto& [rank, range] : steps) {
      text += fmt::format(
          "; {}: steps {}..{}",
          rank < 0 ? std::string("a file naming no rank") : fmt::format("rank {}", rank),
          range.first, range.second);
    }
    return text;
  }

  // The first error-like line that prints a library's message the catalog collected, with
  // the message; nothing when none does.
  struct KnownMessage {
    const Evidence* line = nullptr;
    const MessageLibrary* library = nullptr;
    const Message* message = nullptr;
  };
  KnownMessage library_message(const std::vector<MessageLibrary>& libraries) const {
    std::vector<std::string> texts;
    for (const Evidence& e : error_like_lines) texts.push_back(e.text);
    const auto found = find_messages(libraries, texts);
    for (std::size_t i = 0; i < found.size(); ++i) {
      if (!found[i]) continue;
      const MessageLibrary& library = libraries[found[i]->library];
      return {&error_like_lines[i], &library, &library.messages[found[i]->message]};
    }
    return {};
  }

  std::vector<std::string> what_would_decide(const std::vector<MessageLibrary>& libraries) const {
    std::vector<std::string> out;
    if (const KnownMessage known = library_message(libraries); known.line != nullptr) {
      const Message& m = *known.message;
      const std::string said =
          fmt::format("{}:{} prints {}'s message \"{}\" ({}, versions {})", known.line->file,
                      known.line->line, known.library->name, printable(m.text.substr(0, 160)),
                      m.where, m.versions.empty() ? "unknown" : m.versions);
      out.push_back(m.klass.empty()
                        ? said +
                              ", collected from its source but not classified: once its cause "
                              "is known, its `class` in " +
                              known.library->path + " names it"
                        : fmt::format("{}, of class {} (a {}: not a cause by itself)", said,
                                      m.klass, m.level.empty() ? "message" : m.level));
    }
    if (first_raised) {
      const RaisedError& r = *first_raised;
      std::string line = fmt::format(
          "{} raised {}{}{} ({}:{})",
          r.rank >= 0 ? fmt::format("rank {}", r.rank) : std::string("a process"), r.type,
          r.message.empty() ? "" : ": ", printable(r.message), first_raised_file, r.line);
      if (!r.where().empty()) line += " at " + r.where();
      out.push_back(line + "; no catalog entry names this exception");
    } else if (first_error_like) {
      const Evidence& e = *first_error_like;
      out.push_back(fmt::format(
          "the first line that reads as an error matches no catalog entry ({}:{}: {}); once its "
          "cause is known, a [[signature]] in stages/diagnoses.toml (or --catalog FILE) names it",
          e.file, e.line, printable(e.text)));
    } else {
      out.push_back(
          "no line reads as an error or a warning: if the run failed, its error is in a file not "
          "given here, each rank's stderr (torchrun --log_dir: <dir>/<run id>/attempt_<n>/<local "
          "rank>/stderr.log; Slurm: the job's --error file; an attempt folder: rank<N>.stderr)");
    }
    if (!nccl_info) {
      out.push_back(
          "for a hang or a failed collective, NCCL_DEBUG=INFO (NCCL) and "
          "TORCH_DISTRIBUTED_DEBUG=DETAIL (c10d) make the ranks print what would decide it");
    }
    return out;
  }

  nlohmann::json to_json(const std::vector<MessageLibrary>& libraries) const {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& [rank, range] : steps) {
      ranks.push_back({{"rank", rank}, {"first_step", range.first}, {"last_step", range.second}});
    }
    nlohmann::json doc = {{"files", files},
                          {"lines", lines},
                          {"steps", std::move(ranks)},
                          {"nccl_info", nccl_info},
                          {"first_error_like", nullptr}};
    if (first_error_like) {
      doc["first_error_like"] = {{"file", first_error_like->file},
                                 {"line", first_error_like->line},
                                 {"text", first_error_like->text}};
    }
    if (first_raised) {
      doc["raised"] = {{"rank", first_raised->rank},       {"file", first_raised_file},
                       {"line", first_raised->line},       {"type", first_raised->type},
                       {"message", first_raised->message}, {"at", first_raised->where()}};
    }
    if (const KnownMessage known = library_message(libraries); known.line != nullptr) {
      doc["library_message"] = {
          {"file", known.line->file},       {"line", known.line->line},
          {"library", known.library->name}, {"text", known.message->text},
          {"where", known.message->where},  {"versions", known.message->versions},
          {"class", known.message->klass}};
    }
    return doc;
  }
};

int fail(std::ostream& err, const Error& error) {
  err << "error: " << error.format() << '\n';
  return to_int(exit_code_for(error.kind) == ExitCode::kInfrastructure ? ExitCode::kInfrastructure
                                                                       : ExitCode::kBadInput);
}

}  // namespace

// The message catalog's coverage, by library (diagnose --coverage).
static void print_coverage(const Catalog& catalog, bool json, std::ostream& out) {
  std::vector<std::size_t> signatures(catalog.libraries.size());
  for (const Signature& s : catalog.signatures) {
    if (s.library >= 0) ++signatures[static_cast<std::size_t>(s.library)];
  }
  const std::vector<MessageCoverage> rows = message_coverage(catalog.libraries, signatures);
  if (!json) {
    out << coverage_table(rows);
    return;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const MessageCoverage& r : rows) {
    list.push_back({{"library", r.library},
                    {"versions", r.versions},
                    {"collected", r.collected},
                    {"classified", r.classified},
                    {"matchable", r.matchable},
                    {"diagnosed", r.signatures}});
  }
  out << nlohmann::json{{"libraries", list}}.dump(2) << "\n";
}

int run_diagnose(const DiagnoseOptions& options, std::ostream& out, std::ostream& err,
                 const std::vector<std::string>& gate_ids) {
  if (options.paths.empty() && !options.coverage) {
    return fail(err,
                make_error(ErrorKind::kUsage, "diagnose needs at least one log file or directory",
                           "or --coverage for what the message catalog covers"));
  }
  auto catalog = resolve_catalog(options.catalog);
  if (!catalog) return fail(err, catalog.error());
  if (options.coverage) {
    print_coverage(*catalog, options.json, out);
    return 0;
  }
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
  const std::vector<launch::RankEnding> exit_errors = attempt_exit_errors(options.paths);
  std::vector<Diagnosis> diagnoses;
  ReadSummary read;
  read.files = files->size();
  for (const auto& group : group_log_files(options.paths, *files)) {
    TextScan scan = diagnoser->start_scan();
    std::vector<logs::RankLog> logs;
    for (const auto& file : group) {
      // The probe writes bigmac-log JSON whatever format the trainer's own lines have.
      const bool probe =
          file.filename().string().rfind("probe-rank", 0) == 0 && file.extension() == ".jsonl";
      auto ranks = read_log_records(
          file, &scan, probe ? logs::ParserOptions(logs::LogFormat::kBigmac) : options.parser);
      if (!ranks) return fail(err, ranks.error());
      std::move(ranks->begin(), ranks->end(), std::back_inserter(logs));
    }
    if (options.merge_folder && !group.empty() &&
        std::all_of(group.begin(), group.end(), [&](const std::filesystem::path& f) {
          return f.parent_path() == group.front().parent_path();
        })) {
      auto merged = options.merge_folder(group.front().parent_path(), std::move(logs));
      if (!merged) return fail(err, merged.error());
      logs = std::move(*merged);
    }
    read.add(scan.read(), logs);
    MetricInput input;
    input.logs = logs;
    input.exit_errors = exit_errors;
    std::vector<Diagnosis> found = diagnoser->finish(scan, input);
    put_ledger_findings_first(found, input);
    for (Diagnosis& d : found) diagnoses.push_back(std::move(d));
  }
  if (options.json) {
    nlohmann::json doc = {{"files", files->size()}, {"diagnoses", to_json(diagnoses)}};
    if (diagnoses.empty()) {
      doc["read"] = read.to_json(diagnoser->catalog().libraries);
      doc["would_decide"] = read.what_would_decide(diagnoser->catalog().libraries);
    }
    out << json_text(doc, 2) << '\n';
  } else {
    print_diagnoses(out, diagnoses);
    if (diagnoses.empty()) {
      out << "  " << read.what_was_read() << '\n';
      for (const std::string& line : read.what_would_decide(diagnoser->catalog().libraries))
        out << "  " << line << '\n';
    }
  }
  return diagnoses.empty() ? to_int(ExitCode::kGateFailed) : to_int(ExitCode::kOk);
}

}  // namespace bigmac::diagnose
