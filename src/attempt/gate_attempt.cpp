#include "attempt/gate_attempt.h"

#include <fmt/format.h>

#include <sstream>

#include "attempt/attempt_files.h"
#include "attempt/attempt_plan.h"
#include "attempt/attempt_regression.h"
#include "attempt/attempt_verdict.h"
#include "attempt/attempt_watch.h"
#include "attempt/fresh_paths.h"
#include "baseline/baseline.h"
#include "gates/early_stop.h"
#include "gates/gate_applicability.h"
#include "gates/observability.h"
#include "launch/master_port.h"
#include "launch/preflight.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;
namespace {

run::Observation could_not_run(const std::string& gate, std::string message) {
  return run::GateAborted{gate, std::move(message)};
}

/// What recording the run's baseline did: written (the message says where), or refused (the
/// message says why and what the trainer must log for it).
struct BaselineRecording {
  bool recorded = false;
  std::string message;
};

/// Records this run's reference from its first passing gate. A file that cannot be written is
/// infrastructure; a log that cannot become a baseline is refused with what to log.
Expected<BaselineRecording> record_run_baseline(const RunContext& context, const fs::path& run_dir,
                                                const AttemptPlan& plan,
                                                const gates::GateEvidence& evidence) {
  baseline::Baseline b = baseline::summarize_records(evidence.all_records(), context.baseline_name,
                                                     plan.gate.inputs_digest, evidence.loss_rank);
  b.recorded = context.recorded(plan.gate);
  if (auto ok = baseline::check_recordable(b); !ok) {
    std::string message = ok.error().format();
    // The metric a step lacks, with the line (or probe setting) that provides it.
    if (!ok.error().key.empty()) {
      message += "; to make it: " + gates::missing_field(ok.error().key).what_to_log;
    }
    return BaselineRecording{false, std::move(message)};
  }
  const fs::path out = run_dir / "baseline.json";
  if (auto saved = baseline::save_baseline(out, b); !saved) return tl::unexpected(saved.error());
  return BaselineRecording{true, fmt::format("recorded baseline '{}' ({} steps) to {}",
                                             context.baseline_name, b.steps.size(), out.string())};
}

/// The first gate passed its checks but its log cannot become the baseline every later gate
/// compares with: the gate fails here, saying what to log, not at the next gate with "no
/// baseline to compare against".
void fail_unrecordable(gates::GateVerdict& verdict, const std::string& gate,
                       const std::string& why) {
  gates::CheckResult r;
  r.name = "baseline_recordable";
  r.message =
      "the checks passed, but the log cannot become the baseline the next gates compare "
      "with: " +
      why;
  r.route_back = gate;
  verdict.results.push_back(std::move(r));
  verdict.passed = false;
  verdict.route_back = gate;
}

// A route back never names a gate the target layout has no use for (shapes for a program
// without stages): the closest earlier gate that applies takes its place.
void route_to_applicable(const RunContext& context, gates::GateVerdict& verdict,
                         std::vector<diagnose::Diagnosis>& diagnoses) {
  auto route = [&](std::string& gate) {
    if (!gate.empty()) gate = gates::applicable_route(context.catalog, context.config, gate);
  };
  route(verdict.route_back);
  for (gates::CheckResult& r : verdict.results) route(r.route_back);
  for (diagnose::Diagnosis& d : diagnoses) route(d.gate);
}

}  // namespace

run::Observation run_attempt(const RunContext& context, const fs::path& run_dir,
                             const std::string& gate, int attempt, AttemptServices& services) {
  const gates::GateSpec* spec = context.catalog.find(gate);
  if (!spec) return could_not_run(gate, "unknown gate " + gate);
  // The reference is read once for the whole attempt: planning, progress, checks and
  // diagnosis all see the same numbers.
  auto loaded = context.load_reference(run_dir, spec->id);
  if (!loaded) return could_not_run(gate, loaded.error().format());
  const Reference* reference = *loaded ? &**loaded : nullptr;

  const std::vector<std::string> devices = context.config.launch.devices != "cpu"
                                               ? services.probe_devices().cuda_devices
                                               : std::vector<std::string>{};
  auto plan = plan_attempt(context, *spec, reference, run_dir, attempt, devices);
  if (!plan) return could_not_run(gate, plan.error().format());
  // Claimed until the ranks are gone, so that no other run takes the port after preflight.
  auto port = launch::reserve_master_port(plan->gate.config.launch);
  if (!port) return could_not_run(gate, port.error().format());
  if (port->port != plan->gate.config.launch.master_port) {
    plan = plan_attempt(context, *spec, reference, run_dir, attempt, devices, port->port);
    if (!plan) return could_not_run(gate, plan.error().format());
    if (!port->note.empty()) services.progress->message(port->note);
  }
  auto written = write_attempt_plan(*plan);
  if (!written) return could_not_run(gate, written.error().format());
  if (!written->empty()) services.progress->message(*written);

  launch::PreflightOptions preflight_options;
  preflight_options.run_dir = run_dir;
  const launch::PreflightReport preflight = launch::run_preflight(plan->launch, preflight_options);
  if (!preflight.ok()) return could_not_run(gate, preflight.render());

  report::Progress& progress = *services.progress;
  const gates::GatePlan& gp = plan->gate;
  progress.detail(fmt::format("gate {}/{} {}: {} ({} rank{}, {} samples/step{})", plan->index + 1,
                              plan->total, gate, spec->title, gp.nproc, gp.nproc == 1 ? "" : "s",
                              gp.samples_per_step, gp.rescaled.empty() ? "" : "; " + gp.rescaled));
  progress.gate_started(
      {plan->index + 1, plan->total, gate, attempt, gp.nproc, gp.config.train.max_steps});

  // A run that died with files set aside puts them back before anything else moves.
  auto recovered = recover_set_aside(run_dir);
  if (!recovered) return could_not_run(gate, recovered.error().format());
  for (const std::string& line : *recovered) progress.message(line);
  std::error_code cwd_error;
  const fs::path ranks_dir = fs::current_path(cwd_error);
  auto aside = set_aside(gp.config.trainer.fresh_paths, ranks_dir, run_dir, plan->dir);
  if (!aside) return could_not_run(gate, aside.error().format());
  for (const SetAside::Entry& e : aside->entries) {
    if (!e.kept.empty()) {
      progress.detail(fmt::format("set aside {} (trainer.fresh_paths): the gate starts fresh",
                                  e.path.string()));
    }
  }
  const AttemptWatch watch = launch_and_watch(*plan, reference, run_dir, services);
  // The ranks are gone: what they wrote at those paths stays with the attempt.
  // A move that fails leaves the manifest: the run's next attempt tries again; the attempt's
  // evidence is saved all the same.
  if (auto back = put_back(*aside); back) {
    for (const std::string& line : *back) progress.detail(line);
  } else {
    progress.message("warning: " + back.error().format() + " (" +
                     (run_dir / kSetAsideManifest).string() + " says where each file is)");
  }
  if (watch.result.status == launch::RunStatus::kInterrupted ||
      watch.result.status == launch::RunStatus::kLaunchFailed) {
    if (auto w = persist_launch_result(*plan, watch); !w)
      return could_not_run(gate, w.error().format());
    if (watch.result.status == launch::RunStatus::kInterrupted) {
      // Where each rank was (the probe's stacks, asked before teardown): the hang the user
      // stopped, without a rerun.
      for (const std::string& place : watch.result.interrupted_at)
        progress.message("interrupted: " + place);
      return run::Interrupted{};
    }
    return could_not_run(gate, watch.result.launch_error ? watch.result.launch_error->format()
                                                         : watch.result.summary());
  }

  const gates::GateEvidence evidence = gather_evidence(watch);
  gates::GateVerdict verdict = evaluate(*plan, evidence, reference);
  if (watch.result.status == launch::RunStatus::kStoppedEarly && watch.certain) {
    verdict = gates::judge_stopped_early(std::move(verdict), *watch.certain, evidence, gp,
                                         reference ? &reference->baseline : nullptr);
  }
  std::vector<diagnose::Diagnosis> diagnoses;
  std::string note;
  if (verdict.passed && plan->index == 0 && !reference) {
    auto recorded = record_run_baseline(context, run_dir, *plan, evidence);
    if (!recorded) return could_not_run(gate, recorded.error().format());
    if (recorded->recorded) {
      note = "baseline recorded";
      progress.detail(recorded->message);
    } else {
      fail_unrecordable(verdict, spec->id, recorded->message);
    }
  }
  if (!verdict.passed) {
    const auto regression = regression_facts(context, *plan, evidence, reference);
    diagnoses = diagnose_failure(*plan, watch, evidence, verdict, reference, *services.diagnoser,
                                 regression ? &*regression : nullptr);
    route_to_applicable(context, verdict, diagnoses);
    std::ostringstream text;
    text << watch.result.summary() << "\n";
    diagnose::print_diagnoses(text, diagnoses);
    // The final block shows the first diagnosis as the verdict card; all of them under -v.
    progress.detail(text.str());
  }
  // The port was taken between preflight and the bind: infrastructure, not the trainer's fault.
  // Decided before the attempt is persisted, so that its folder (no verdict) and the run (the
  // gate aborted) say the same.
  if (!diagnoses.empty() && diagnoses.front().klass == diagnose::kPortInUseClass) {
    if (auto w = persist_aborted_attempt(*plan, watch, diagnoses); !w) {
      return could_not_run(gate, w.error().format());
    }
    return could_not_run(gate, "master port collision: " + diagnoses.front().symptom);
  }
  if (auto w = persist_attempt(*plan, watch, evidence, verdict, diagnoses); !w) {
    return could_not_run(gate, w.error().format());
  }
  progress.gate_finished(verdict, note);
  progress.detail(gates::format_verdict(verdict));

  const gates::CheckResult* failed = verdict.first_failure();
  const gates::UnobservableFinding* blind = verdict.first_required_unobservable();
  run::GateFinished finished;
  finished.gate = gate;
  finished.passed = verdict.passed;
  finished.summary = verdict.summary();
  finished.failed_check = failed ? failed->name : blind ? blind->required.front() : std::string();
  finished.route_back = verdict.route_back;
  // A baseline recorded just now is what later gates compare with, not this gate's input.
  finished.inputs =
      gates::gate_inputs(gp, context.trainer_binary, reference ? reference->digest : std::string());
  return finished;
}

}  // namespace bigmac::attempt
