#include "report/report_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "core/atomic_file.h"
#include "core/file_creation.h"
#include "core/file_error.h"
#include "core/json_file.h"
#include "report/html_report.h"
#include "report/junit_xml.h"
#include "report/markdown_summary.h"
#include "report/summary_json.h"

namespace bigmac::report {

Expected<ReportFormat> parse_report_format(std::string_view name) {
  if (name == "json") return ReportFormat::kJson;
  if (name == "junit" || name == "xml") return ReportFormat::kJunit;
  if (name == "md" || name == "markdown") return ReportFormat::kMarkdown;
  if (name == "html") return ReportFormat::kHtml;
  Error e = make_error(ErrorKind::kUsage, "unknown report format '" + std::string(name) + "'",
                       "choose one of html, md, json, junit");
  e.key = "--format";
  return tl::unexpected(std::move(e));
}

std::string_view report_file_name(ReportFormat format) {
  switch (format) {
    case ReportFormat::kJson:
      return "summary.json";
    case ReportFormat::kJunit:
      return "junit.xml";
    case ReportFormat::kMarkdown:
      return "summary.md";
    case ReportFormat::kHtml:
      return "report.html";
  }
  return "";
}

std::string render_report(const ReportInput& input, ReportFormat format) {
  switch (format) {
    case ReportFormat::kJson:
      return json_text(summary_json(input), 2) + "\n";
    case ReportFormat::kJunit:
      return render_junit(input);
    case ReportFormat::kMarkdown:
      return render_markdown(input);
    case ReportFormat::kHtml:
      return render_html(input);
  }
  return {};
}

Expected<std::vector<std::filesystem::path>> write_reports(const ReportInput& input,
                                                           const std::filesystem::path& run_dir,
                                                           const std::string& step_summary) {
  std::vector<std::filesystem::path> written;
  for (ReportFormat f :
       {ReportFormat::kJson, ReportFormat::kJunit, ReportFormat::kMarkdown, ReportFormat::kHtml}) {
    const auto path = run_dir / report_file_name(f);
    if (auto ok = write_file_atomically(path, render_report(input, f)); !ok) {
      return tl::unexpected(ok.error());
    }
    written.push_back(path);
  }
  if (!step_summary.empty()) {
    // GitHub owns this file and other steps append to it too: append, never replace, and
    // never through a link (core/file_creation).
    auto fd = create_file(step_summary, Existing::kAppend);
    if (!fd) return tl::unexpected(fd.error());
    const std::string text = render_report(input, ReportFormat::kMarkdown) + "\n";
    for (std::string_view left = text; !left.empty();) {
      const ssize_t n = ::write(fd->get(), left.data(), left.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return tl::unexpected(file_error(step_summary, "cannot append the summary", errno));
      left.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  return written;
}

Expected<std::vector<std::filesystem::path>> generate_reports(
    const std::filesystem::path& run_dir, const std::filesystem::path& baseline_path,
    const logs::ParserOptions& parser) {
  auto input = load_report_input(run_dir, baseline_path, parser);
  if (!input) return tl::unexpected(input.error());
  const char* step_summary = std::getenv("GITHUB_STEP_SUMMARY");
  return write_reports(*input, run_dir, step_summary ? step_summary : "");
}

}  // namespace bigmac::report
