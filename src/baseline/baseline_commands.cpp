#include "baseline/baseline_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>

#include "baseline/baseline.h"
#include "baseline/baseline_diff.h"
#include "baseline/rank_series.h"
#include "logs/rank_log.h"

namespace bigmac::baseline {
namespace {

CommandResult failure(const Error& e) { return {exit_code_for(e.kind), e.format() + "\n"}; }

std::string opt(const std::optional<double>& v) {
  return v ? fmt::format("{:.6g}", *v) : std::string("-");
}

}  // namespace

Expected<std::vector<logs::Record>> read_log_records(const std::filesystem::path& path,
                                                     const logs::ParserOptions& options) {
  std::vector<logs::Record> records;
  auto read =
      logs::stream_log_file(path.string(), options, -1, [&](std::vector<logs::Record>& more) {
        records.insert(records.end(), std::make_move_iterator(more.begin()),
                       std::make_move_iterator(more.end()));
      });
  if (!read) {
    Error e = std::move(read.error());
    e.hint = "pass a rank's log file; of a run directory, its rank*.log files";
    return tl::unexpected(std::move(e));
  }
  return records;
}

CommandResult show_baseline(const std::filesystem::path& path) {
  auto b = load_baseline(path);
  if (!b) return failure(b.error());
  const Fingerprint& f = b->fingerprint;
  std::string out = fmt::format("baseline {} ({})\n", b->name, path.string());
  out += fmt::format(
      "  fingerprint: tool {} torch {}{} backend {} device {} dtype {} seed {} "
      "world_size {} config {}\n",
      f.tool_version, f.torch_version,
      f.python_version.empty() ? "" : " python " + f.python_version, f.backend, f.device, f.dtype,
      f.seed ? std::to_string(*f.seed) : "-", f.world_size, f.config_digest);
  out += fmt::format("  recorded: commit {} trainer digest {} ({} settings)\n",
                     b->recorded.commit.empty() ? "-" : b->recorded.commit,
                     b->recorded.trainer_digest.empty() ? "-" : b->recorded.trainer_digest,
                     b->recorded.config.size());
  out += fmt::format("  structure: param_count {} param_digest {} input [{}] {} steps {}\n",
                     b->structure.param_count.value_or(-1), b->structure.param_digest,
                     fmt::join(b->structure.input_shape, ","), b->structure.input_dtype,
                     b->structure.steps);
  out += fmt::format("  {:>5}  {:>12}  {:>12}  {:>12}  {:>8}\n", "step", "loss", "grad_norm", "lr",
                     "samples");
  for (const BaselineStep& s : b->steps) {
    out += fmt::format("  {:>5}  {:>12}  {:>12}  {:>12}  {:>8}\n", s.global_step, opt(s.loss),
                       opt(s.grad_norm), opt(s.lr),
                       s.samples_per_step ? std::to_string(*s.samples_per_step) : "-");
  }
  return {ExitCode::kOk, out};
}

CommandResult diff_baseline_files(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto x = load_baseline(a);
  if (!x) return failure(x.error());
  auto y = load_baseline(b);
  if (!y) return failure(y.error());
  const BaselineDiff d = diff_baselines(*x, *y);
  return {d.identical() ? ExitCode::kOk : ExitCode::kGateFailed,
          format_diff(d, a.string(), b.string())};
}

CommandResult record_baseline(const std::vector<logs::Record>& records, bool gate_passed,
                              const std::filesystem::path& out, const std::string& name,
                              const std::string& config_digest, const Recorded& recorded) {
  if (!gate_passed) {
    return {ExitCode::kGateFailed,
            fmt::format("refusing to record baseline '{}': the single gate did not pass "
                        "(rerun it: bigmac-bringup run single)\n",
                        name)};
  }
  Baseline b = summarize_records(records, name, config_digest);
  b.recorded = recorded;
  if (auto ok = check_recordable(b); !ok) {
    return {ExitCode::kGateFailed, "refusing to record: " + ok.error().format() + "\n"};
  }
  if (auto ok = save_baseline(out, b); !ok) return failure(ok.error());
  return {
      ExitCode::kOk,
      fmt::format("recorded baseline '{}' ({} steps{}) to {}\n", name, b.steps.size(),
                  b.recorded.commit.empty() ? "" : ", commit " + b.recorded.commit, out.string())};
}

CommandResult compare_logs(const std::vector<std::filesystem::path>& logs,
                           const std::filesystem::path& baseline_file,
                           const ComparisonPolicy& policy, const logs::ParserOptions& options) {
  auto reference = load_baseline(baseline_file);
  if (!reference) return failure(reference.error());
  auto all = read_rank_series(logs, options);
  if (!all) return failure(all.error());
  // Every rank that logs steps is compared, not only the lowest: ranks that disagree with each
  // other cannot all match one baseline (issue 30 item 7).
  std::vector<const RankSeries*> stepping;
  for (const RankSeries& series : *all) {
    if (series.steps.empty()) continue;
    if (auto why = series_contradiction(series)) {
      return {ExitCode::kGateFailed, "comparison: not made — " + *why + "\n"};
    }
    stepping.push_back(&series);
  }
  std::vector<logs::Record> records;
  for (const RankSeries& series : *all) {
    records.insert(records.end(), series.records.begin(), series.records.end());
  }
  // The first series (the lowest rank) speaks for the run unless another one fails.
  Comparison shown = compare_runs(*reference, summarize_records(records, "observed", {}), policy);
  std::string failing;
  for (const RankSeries* series : stepping) {
    if (!shown.passed()) break;
    Comparison c =
        compare_runs(*reference, summarize_records(series->records, "observed", {}), policy);
    if (c.passed()) continue;
    shown = std::move(c);
    failing = series->label;
  }
  std::string text = format_comparison(shown);
  if (!failing.empty()) {
    text.insert(std::string("comparison: ").size(), failing + ": ");
  } else if (stepping.size() > 1) {
    text += fmt::format("  {} series with steps compared, {} to {}: none fails\n", stepping.size(),
                        stepping.front()->label, stepping.back()->label);
  }
  return {shown.passed() ? ExitCode::kOk : ExitCode::kGateFailed, text};
}

}  // namespace bigmac::baseline
