#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "report/report_input.h"

namespace bigmac::report {

/// The four report files of a run directory.
enum class ReportFormat { kJson, kJunit, kMarkdown, kHtml };

/// "json" | "junit" | "md" | "html" (also "markdown", "xml"); a usage Error naming the choices.
Expected<ReportFormat> parse_report_format(std::string_view name);

/// summary.json, junit.xml, summary.md, report.html.
std::string_view report_file_name(ReportFormat format);

/// One format as text (what `report RUN_DIR --format F` prints or writes).
std::string render_report(const ReportInput& input, ReportFormat format);

/// Writes all four files into `run_dir`, each atomically, and returns their paths. When
/// `step_summary` is not empty (the value of $GITHUB_STEP_SUMMARY) the Markdown is also
/// appended to that file, as GitHub Actions expects.
Expected<std::vector<std::filesystem::path>> write_reports(const ReportInput& input,
                                                           const std::filesystem::path& run_dir,
                                                           const std::string& step_summary = {});

/// Loads the run directory (rank logs, where an attempt left no records, read as `parser`
/// says: the run's) and writes every report: the one call `run-all` makes at the end.
/// Reads $GITHUB_STEP_SUMMARY itself.
Expected<std::vector<std::filesystem::path>> generate_reports(
    const std::filesystem::path& run_dir, const std::filesystem::path& baseline_path,
    const logs::ParserOptions& parser);

}  // namespace bigmac::report
