#include "gates/process_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <span>

#include "baseline/checkpoint_writers.h"
#include "baseline/progress.h"
#include "gates/observability.h"
#include "gates/series_rules.h"

namespace bigmac::gates {
namespace {

int stage_of(const RankEvidence& r) { return r.layouts.empty() ? 0 : r.layouts.front().stage; }

// "exit 2 on node n1", "killed by SIGTERM on node n2 (the node failed)".
std::string exit_summary(const RankEnding& exit) {
  std::string text = exit.describe();
  if (!exit.node.empty()) text += " on node " + exit.node;
  if (exit.node_failed) text += " (Slurm reported the node failed)";
  if (!exit.stalled && !exit.detail.empty()) text += " (" + exit.detail + ")";
  return text;
}

}  // namespace

CheckResult check_exit_status(const CheckContext& ctx) {
  const char* name = "exit_status";
  if (ctx.evidence.ranks.empty()) return fail(name, "no rank processes: nothing to check");
  std::vector<CheckEvidence> bad;
  std::vector<CheckEvidence> consequences;  // ranks stopped because another failed: listed after
  std::int64_t clean = 0;
  std::int64_t stopped = 0;
  // A stalled rank is the cause the others' exits follow from: it comes first.
  std::vector<const RankEvidence*> order;
  for (const RankEvidence& r : ctx.evidence.ranks) order.push_back(&r);
  std::stable_partition(order.begin(), order.end(),
                        [](const RankEvidence* r) { return r->exit.stalled; });
  for (const RankEvidence* rank : order) {
    const RankEvidence& r = *rank;
    if (r.exit.clean()) {
      ++clean;
      continue;
    }
    if (r.exit.stopped_at_non_finite && !r.exit.stalled) {
      ++stopped;
      continue;
    }
    std::vector<CheckEvidence>& into = r.exit.stopped && !r.exit.node_failed ? consequences : bad;
    into.push_back(
        CheckEvidence{r.rank, 0, fmt::format("rank {}: {}", r.rank, exit_summary(r.exit))});
    if (!r.exit.error_lines.empty()) {
      // Its own last words on stderr, whatever the launcher put around them.
      for (const std::string& line : r.exit.error_lines) {
        into.push_back(CheckEvidence{r.rank, 0, "stderr: " + line});
      }
      continue;
    }
    // The last output lines usually hold the reason (a traceback's final line).
    const std::vector<logs::TextLine> text = r.context.lines();
    const std::size_t from = text.size() > 3 ? text.size() - 3 : 0;
    for (std::size_t i = from; i < text.size(); ++i)
      into.push_back(evidence_of(text[i], text[i].text));
  }
  bad.insert(bad.end(), consequences.begin(), consequences.end());
  if (static_cast<int>(ctx.evidence.ranks.size()) != ctx.plan.nproc) {
    bad.insert(bad.begin(), CheckEvidence{-1, 0,
                                          fmt::format("{} rank logs for {} planned processes",
                                                      ctx.evidence.ranks.size(), ctx.plan.nproc)});
  }
  if (!bad.empty()) {
    // Formatted before `bad` is moved into the result (argument order is unspecified).
    std::string message =
        fmt::format("{} of {} ranks did not exit cleanly; first: {}",
                    ctx.plan.nproc - clean - stopped, ctx.plan.nproc, bad.front().text);
    return fail(name, std::move(message), std::move(bad));
  }
  if (stopped > 0) {
    return pass(name, fmt::format("{} ranks exited 0; {} stopped by the orchestrator at a "
                                  "non-finite loss (judged by finite_loss)",
                                  clean, stopped));
  }
  return pass(name, fmt::format("all {} ranks exited 0", clean));
}

CheckResult check_process_group_formed(const CheckContext& ctx) {
  const char* name = "process_group_formed";
  if (ctx.evidence.ranks.empty()) return fail(name, "no rank logs: nothing to check");
  std::vector<int> missing;
  std::vector<CheckEvidence> evidence;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    if (r.pg_ready.empty()) {
      missing.push_back(r.rank);
      continue;
    }
    const logs::PgReadyRecord& pg = r.pg_ready.front();
    if (pg.world_size != ctx.plan.nproc) {
      return fail(name,
                  fmt::format("rank {} joined a group of {} ranks, planned {}", r.rank,
                              pg.world_size, ctx.plan.nproc),
                  {evidence_of(pg, fmt::format("pg_ready world_size={}", pg.world_size))});
    }
    evidence.push_back(evidence_of(pg, fmt::format("pg_ready after {:.0f} ms", pg.init_ms)));
  }
  const bool all_clean =
      std::all_of(ctx.evidence.ranks.begin(), ctx.evidence.ranks.end(),
                  [](const RankEvidence& r) { return !r.exit.known || r.exit.clean(); });
  // The probe sees init_process_group: ranks that trained under it without one never formed a
  // group at all. Each trained alone: the program is not distributed yet.
  const bool probe_everywhere = std::all_of(ctx.evidence.ranks.begin(), ctx.evidence.ranks.end(),
                                            [](const RankEvidence& r) { return r.probe_ran; });
  // A rank trained when the probe counted a step of it (its step series may be another
  // rank's, or not read yet: its digests are its own).
  const auto trained_alone = [](const RankEvidence& r) {
    return !r.steps.empty() || !r.step_digests.empty();
  };
  // Every planned rank must have trained so: a rank still starting may yet form the group.
  if (missing.size() == ctx.evidence.ranks.size() && ctx.plan.nproc > 1 && probe_everywhere &&
      static_cast<int>(ctx.evidence.ranks.size()) == ctx.plan.nproc &&
      std::all_of(ctx.evidence.ranks.begin(), ctx.evidence.ranks.end(), trained_alone)) {
    std::vector<CheckEvidence> trained;
    for (const RankEvidence& r : ctx.evidence.ranks) {
      if (!r.step_digests.empty()) {
        trained.push_back(
            CheckEvidence{r.rank, r.step_digests.front().at.line,
                          fmt::format("rank {} trained alone: step {} without a process group",
                                      r.rank, r.step_digests.front().step)});
      } else if (!r.steps.empty()) {
        trained.push_back(evidence_of(
            r.steps.front(), fmt::format("rank {} trained alone: step {} without a process group",
                                         r.rank, r.steps.front().global_step)));
      }
    }
    CheckResult r = fail(
        name,
        fmt::format("the program is not distributed: all {} ranks trained, each on its own, and "
                    "none called torch.distributed.init_process_group (the probe sees that call)",
                    ctx.plan.nproc),
        std::move(trained));
    r.route_back = "dp";
    // The probe writes pg_ready as init_process_group returns, before any step it counts: a
    // step without it is final.
    return certain(std::move(r), -1);
  }
  // A trainer that never says its group formed, yet every rank stepped and ended well.
  if (missing.size() == ctx.evidence.ranks.size() && all_clean && logged_steps(ctx.evidence)) {
    return unobservable(name, "no rank logged pg_ready", {"pg_ready"});
  }
  if (!missing.empty() || static_cast<int>(ctx.evidence.ranks.size()) < ctx.plan.nproc) {
    return fail(name,
                fmt::format("process group did not form: ranks [{}] never logged pg_ready "
                            "({} of {} ranks have logs)",
                            fmt::join(missing, ","), ctx.evidence.ranks.size(), ctx.plan.nproc),
                std::move(evidence));
  }
  return pass(name, fmt::format("all {} ranks joined the process group", ctx.plan.nproc),
              std::move(evidence));
}

CheckResult check_single_checkpoint_writer(const CheckContext& ctx) {
  const char* name = "single_checkpoint_writer";
  const auto writers =
      baseline::checkpoint_writers(std::span<const RankEvidence>(ctx.evidence.ranks));
  std::vector<int> ranks;
  std::vector<CheckEvidence> evidence;
  for (const auto& w : writers) {
    ranks.push_back(w.log->rank);
    evidence.push_back(evidence_of(*w.record, "ckpt " + w.record->path));
  }
  if (writers.empty())
    return not_logged(ctx.evidence, name, "no rank logged a checkpoint: nothing to check",
                      {"ckpt"});
  if (writers.size() > 1) {
    // A second writer is final from its first checkpoint.
    return certain(fail(name,
                        fmt::format("{} ranks wrote checkpoints: [{}]; exactly one (rank 0) must",
                                    writers.size(), fmt::join(ranks, ",")),
                        std::move(evidence)),
                   writers[1].record->step);
  }
  return pass(name, fmt::format("only rank {} wrote checkpoints", ranks.front()),
              std::move(evidence));
}

CheckResult check_no_idle_stage(const CheckContext& ctx) {
  const char* name = "no_idle_stage";
  if (ctx.evidence.ranks.empty()) return fail(name, "no rank logs: nothing to check");
  const double limit = idle_limit(ctx.params);
  double worst = 0;
  std::vector<std::string> unjudged;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    if (r.exit.stalled) {
      return fail(
          name,
          fmt::format("rank {} (stage {}) stalled: {}", r.rank, stage_of(r), r.exit.describe()),
          {CheckEvidence{r.rank, 0, r.exit.describe()}});
    }
    const std::vector<baseline::WorkSign> signs = baseline::signs_of_work(r);
    const std::optional<baseline::IdleGap> gap = baseline::longest_idle(signs);
    if (!gap) {
      // A rank that prints nothing (Megatron logs on the last rank only) cannot be judged; the
      // others still are, and a stall was caught above.
      unjudged.push_back(fmt::format("rank {} (stage {}) logged {} timed sign of work", r.rank,
                                     stage_of(r), signs.size()));
      continue;
    }
    worst = std::max(worst, gap->seconds());
    if (gap->seconds() > limit) {
      return fail(name,
                  fmt::format("rank {} (stage {}) idle {:.1f} s (limit {:g} s)", r.rank,
                              stage_of(r), gap->seconds(), limit),
                  {CheckEvidence{r.rank, gap->before.line, "last work before the gap"},
                   CheckEvidence{r.rank, gap->after.line, "first work after the gap"}});
    }
  }
  if (!unjudged.empty()) {
    return not_logged(ctx.evidence, name,
                      fmt::format("{}: cannot tell whether it idled", fmt::join(unjudged, "; ")),
                      {"heartbeat"});
  }
  return pass(name, fmt::format("no rank idle longer than {:.2f} s (limit {:g} s)", worst, limit));
}

CheckResult check_fresh_start(const CheckContext& ctx) {
  const char* name = "fresh_start";
  if (ctx.evidence.ranks.empty()) return fail(name, "no rank logs: nothing to check");
  bool seen = false;  // the probe sees every torch.load; without it nothing says what was read
  std::size_t loads = 0;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    seen = seen || r.probe_ran;
    for (const logs::LoadRecord& l : r.loads) {
      ++loads;
      auto it = ctx.evidence.earlier_checkpoints.find(l.path);
      if (it == ctx.evidence.earlier_checkpoints.end()) continue;
      CheckResult result = fail(
          name,
          fmt::format("rank {} resumed {}, which {} wrote: the gate did not start fresh, so it "
                      "continues that run instead of repeating the baseline's steps",
                      r.rank, l.path, it->second),
          {evidence_of(l, fmt::format("load {} before step {}", l.path, l.global_step))});
      return certain(std::move(result), l.global_step > 0 ? l.global_step : -1);
    }
  }
  if (!seen) {
    return unobservable(name, "without the probe no rank says which files it loaded", {"load"});
  }
  return pass(name, loads == 0 ? std::string("no rank loaded a checkpoint")
                               : fmt::format("{} file{} loaded, none written by an earlier gate",
                                             loads, loads == 1 ? "" : "s"));
}

}  // namespace bigmac::gates
