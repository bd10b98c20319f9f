#include "audit/project_audit.h"

#include <algorithm>
#include <tuple>

#include "audit/config_reader.h"
#include "audit/constraint_checks.h"
#include "audit/model_checks.h"
#include "audit/project_files.h"
#include "audit/python_helper.h"
#include "audit/python_reader.h"
#include "audit/setting_checks.h"
#include "audit/shell_reader.h"
#include "core/atomic_file.h"

namespace bigmac::audit {
namespace {

// Python files per helper run: keeps argv far below the kernel's limit on large projects.
constexpr std::size_t kPythonBatch = 200;

Errors read_python(const std::vector<std::string>& files, const AuditOptions& options,
                   proc::ProcessRunner& runner, ProjectFacts& facts) {
  if (files.empty()) return {};
  auto helper = PythonHelper::locate(options.program_dir, options.python);
  if (!helper) {
    Error e = helper.error();
    e.message += " (" + std::to_string(files.size()) + " Python file" +
                 (files.size() == 1 ? "" : "s") + " to read, first " + files.front() + ")";
    return {e};
  }
  Errors errors;
  for (std::size_t start = 0; start < files.size(); start += kPythonBatch) {
    const std::vector<std::string> batch(
        files.begin() + static_cast<long>(start),
        files.begin() + static_cast<long>(std::min(files.size(), start + kPythonBatch)));
    auto json = helper->run(runner, batch);
    if (!json) return {json.error()};
    Errors batch_errors = read_python_facts(*json, facts);
    errors.insert(errors.end(), batch_errors.begin(), batch_errors.end());
  }
  return errors;
}

/// One place per (file, line, setting, kind, source): argparse's "--pp" and dest="pp" on one
/// line are one place.
void deduplicate(ProjectFacts& facts) {
  auto key = [](const Place& p) {
    return std::make_tuple(p.file, p.line, p.setting, p.kind, p.source);
  };
  std::stable_sort(facts.places.begin(), facts.places.end(),
                   [&](const Place& a, const Place& b) { return key(a) < key(b); });
  facts.places.erase(std::unique(facts.places.begin(), facts.places.end(),
                                 [&](const Place& a, const Place& b) { return key(a) == key(b); }),
                     facts.places.end());
}

void sort_findings(const ProjectFacts& facts, std::vector<Finding>& findings) {
  auto file_index = [&](const std::string& file) {
    return std::find(facts.files.begin(), facts.files.end(), file) - facts.files.begin();
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    return std::make_tuple(file_index(a.file), a.line, a.kind) <
           std::make_tuple(file_index(b.file), b.line, b.kind);
  });
  findings.erase(std::unique(findings.begin(), findings.end(),
                             [](const Finding& a, const Finding& b) {
                               return a.kind == b.kind && a.file == b.file && a.line == b.line &&
                                      a.message == b.message;
                             }),
                 findings.end());
}

}  // namespace

tl::expected<ProjectAudit, Errors> audit_project(const AuditOptions& options,
                                                 proc::ProcessRunner& runner) {
  auto files =
      find_project_files(options.paths.empty() ? std::vector<std::string>{"."} : options.paths);
  if (!files) return tl::unexpected(files.error());
  ProjectAudit audit;
  Errors errors;
  std::vector<std::string> python_files;
  for (const ProjectFile& file : *files) {
    audit.facts.files.push_back(file.path);
    if (file.kind == FileKind::kPython) {
      python_files.push_back(file.path);
      continue;
    }
    auto text = read_file(file.path);
    if (!text) {
      errors.push_back(text.error());
      continue;
    }
    if (file.kind == FileKind::kShell) {
      read_shell_script(*text, file.path, audit.facts);
    } else if (auto read = read_config_file(*text, file.path, audit.facts); !read) {
      errors.push_back(read.error());
    }
  }
  Errors python_errors = read_python(python_files, options, runner, audit.facts);
  errors.insert(errors.end(), python_errors.begin(), python_errors.end());
  if (!errors.empty()) return tl::unexpected(errors);

  deduplicate(audit.facts);
  audit.runs = build_runs(audit.facts);
  auto add = [&](std::vector<Finding> found) {
    audit.findings.insert(audit.findings.end(), found.begin(), found.end());
  };
  add(check_layers(audit.facts, audit.runs));
  add(check_conflicts(audit.facts, audit.runs));
  add(check_derived(audit.facts));
  add(check_constraints(audit.facts, audit.runs, audit.unchecked));
  add(check_model(audit.facts));
  add(check_config_print(audit.facts, audit.runs, audit.unchecked));
  sort_findings(audit.facts, audit.findings);
  return audit;
}

}  // namespace bigmac::audit
