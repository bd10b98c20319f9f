#include "cli/gate_execution.h"

#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "baseline/baseline_commands.h"
#include "cli/trainer_command.h"
#include "config/config_writer.h"
#include "core/atomic_file.h"
#include "diagnose/diagnosis.h"
#include "launch/clock.h"
#include "launch/device_inventory.h"
#include "launch/launch_planner.h"
#include "launch/plan_execution.h"
#include "launch/preflight.h"
#include "launch/process_record.h"
#include "proc/posix_process_runner.h"
#include "proc/signal_name.h"
#include "report/attempt_result.h"
#include "report/step_comparison.h"

namespace bigmac::cli {
namespace fs = std::filesystem;
namespace {

/// What one rank produced. A trainer may write its events both to stdout and to its own log
/// file; the log file wins when it has records, stdout/stderr then only add context lines.
struct RankRecords {
  std::vector<logs::Record> from_file;
  std::vector<logs::Record> from_streams;

  std::vector<logs::Record> merged() const {
    if (from_file.empty()) return from_streams;
    std::vector<logs::Record> out = from_file;
    for (const logs::Record& r : from_streams) {
      if (std::holds_alternative<logs::TextLine>(r)) out.push_back(r);
    }
    return out;
  }
};

gates::RankExit rank_exit(const launch::RankOutcome& outcome, const launch::RunResult& result) {
  gates::RankExit exit;
  exit.known = outcome.exit.has_value();
  if (outcome.exit) {
    if (outcome.exit->signal != 0) {
      exit.signal = proc::signal_name(outcome.exit->signal);
    } else {
      exit.exit_code = outcome.exit->exit_code;
    }
  }
  for (const launch::Stall& stall : result.stalls) {
    if (stall.rank == outcome.rank) {
      exit.stalled = true;
      exit.detail = stall.describe();
    }
  }
  if (outcome.stopped_by_us && result.status == launch::RunStatus::kNonFinite) {
    exit.stopped_at_non_finite = true;
    exit.detail = "stopped by the orchestrator: " + result.non_finite->describe();
  } else if (exit.detail.empty() && outcome.stopped_by_us) {
    exit.detail = "stopped by the orchestrator after another rank failed";
  }
  return exit;
}

diagnose::BaselineValues baseline_values(const baseline::Baseline& b) {
  diagnose::BaselineValues v;
  for (const baseline::BaselineStep& step : b.steps) {
    v.loss.push_back(step.loss.value_or(0));
    v.grad_norm.push_back(step.grad_norm.value_or(0));
    v.lr.push_back(step.lr.value_or(0));
    if (step.samples_per_step && v.samples_per_step == 0) v.samples_per_step = *step.samples_per_step;
  }
  v.param_count = b.structure.param_count.value_or(0);
  return v;
}

diagnose::LaunchFacts launch_facts(const launch::LaunchPlan& plan,
                                   const launch::RunResult& result) {
  diagnose::LaunchFacts facts;
  facts.planned_world_size = plan.world_size;
  facts.processes_started = static_cast<int>(plan.processes.size());
  for (const launch::Stall& stall : result.stalls) {
    std::string where = stall.before_rendezvous ? "before rendezvous (init_process_group)"
                        : stall.last_step ? fmt::format("after step {}", *stall.last_step)
                                          : "after rendezvous";
    facts.stalled.push_back(
        {stall.rank, where, std::chrono::duration<double>(stall.silent_for).count()});
  }
  for (const launch::RankOutcome& r : result.ranks) {
    if (!r.exit || r.stopped_by_us) continue;
    facts.exited.push_back({r.rank, r.exit->exit_code, r.exit->signal,
                            r.duration ? std::chrono::duration<double>(*r.duration).count() : 0});
  }
  return facts;
}

}  // namespace

ProcessGateExecutor::ProcessGateExecutor(const RunContext& context,
                                         const gates::RunDirectory& run_dir,
                                         const diagnose::Diagnoser& diagnoser,
                                         const std::atomic<bool>& cancel,
                                         report::Progress& progress)
    : context_(context),
      run_dir_(run_dir),
      diagnoser_(diagnoser),
      cancel_(cancel),
      progress_(progress) {}

gates::GateOutcome ProcessGateExecutor::aborted(std::string message) const {
  gates::GateOutcome outcome;
  outcome.kind = gates::GateOutcome::Kind::kAborted;
  outcome.message = std::move(message);
  return outcome;
}

gates::GateOutcome ProcessGateExecutor::execute(const std::string& gate, int attempt) {
  const gates::GateSpec* spec = context_.catalog.find(gate);
  if (!spec) return aborted("unknown gate " + gate);
  const auto ids = context_.catalog.ids();
  const std::size_t index =
      static_cast<std::size_t>(std::find(ids.begin(), ids.end(), gate) - ids.begin());
  const fs::path run_path = run_dir_.path();
  const std::optional<baseline::Baseline> reference = context_.reference(run_path, gate);
  const std::optional<fs::path> reference_file = context_.reference_path(run_path, gate);

  auto plan = context_.plan(*spec, run_path);
  if (!plan) return aborted(plan.error().format());
  const fs::path dir = run_dir_.attempt_dir(index, gate, attempt);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return aborted(fmt::format("cannot create {}: {}", dir.string(), ec.message()));

  const config::Config& cfg = plan->config;
  const bool yaml = cfg.trainer.kind == "command" && cfg.trainer.gate_config_format == "yaml";
  const fs::path gate_file = dir / (yaml ? "gate.yaml" : "gate.toml");
  const std::string header = fmt::format(
      "bigmac-bringup gate {} ({}), attempt {}\nthe effective configuration of this gate's ranks",
      gate, spec->title, attempt);
  if (auto w = write_file_atomically(gate_file, yaml ? config::to_yaml(cfg, header)
                                                      : config::to_toml(cfg, header));
      !w) {
    return aborted(w.error().format());
  }

  const auto placeholders = gate_placeholders(cfg, gate, gate_file, run_path);
  launch::PlanInputs inputs;
  inputs.trainer_argv = trainer_argv(cfg, context_.trainer_binary, placeholders);
  inputs.log_dir = dir;
  inputs.extra_env = gate_environment(cfg, placeholders);
  if (cfg.launch.devices != "cpu") inputs.visible_devices = launch::probe_devices().cuda_devices;
  auto launch_plan = launch::plan_launch(cfg, inputs);
  if (!launch_plan) return aborted(launch_plan.error().format());
  if (auto w = launch::write_plan(*launch_plan, dir / launch::kLaunchPlanName); !w) {
    return aborted(w.error().format());
  }

  launch::PreflightOptions preflight_options;
  preflight_options.run_dir = run_path;
  launch::PreflightReport preflight = launch::run_preflight(*launch_plan, preflight_options);
  if (!preflight.ok()) return aborted(preflight.render());

  progress_.message(fmt::format("gate {}/{} {}: {} ({} rank{}, {} samples/step{})", index + 1,
                                ids.size(), gate, spec->title, plan->nproc,
                                plan->nproc == 1 ? "" : "s", plan->samples_per_step,
                                plan->rescaled.empty() ? "" : "; " + plan->rescaled));
  progress_.gate_started({index + 1, ids.size(), gate, attempt, plan->nproc,
                          cfg.train.max_steps});

  std::map<int, RankRecords> records;
  std::set<int> ranks_seen;
  const double started_at = std::chrono::duration<double>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  proc::PosixProcessRunner runner;
  launch::SteadyClock clock;
  launch::RunOptions options = launch::run_options_for(cfg.launch);
  options.cancel = &cancel_;
  options.process_record = run_path / launch::kProcessRecordName;
  const launch::RunResult result = launch::execute_plan(
      *launch_plan, runner, clock, options,
      [&](const logs::Record& record, launch::RecordSource source) {
        const int rank = std::visit([](const auto& r) { return r.at.rank; }, record);
        RankRecords& rr = records[rank < 0 ? 0 : rank];
        (source == launch::RecordSource::kLogFile ? rr.from_file : rr.from_streams)
            .push_back(record);
        if (ranks_seen.insert(rank < 0 ? 0 : rank).second) {
          progress_.ranks_up(static_cast<int>(ranks_seen.size()));
        }
        if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
          progress_.step(step->global_step, step->loss,
                         report::baseline_loss_at(reference ? &*reference : nullptr,
                                                  step->global_step));
        }
      });
  (void)write_file_atomically(
      dir / "result.json",
      report::to_json(report::attempt_result_of(result, started_at)).dump(2) + "\n");

  if (result.status == launch::RunStatus::kInterrupted) {
    gates::GateOutcome outcome;
    outcome.kind = gates::GateOutcome::Kind::kInterrupted;
    return outcome;
  }
  if (result.status == launch::RunStatus::kLaunchFailed) {
    return aborted(result.launch_error ? result.launch_error->format() : result.summary());
  }

  gates::GateEvidence evidence;
  std::vector<diagnose::LogRecords> diagnosis_input;
  for (const launch::RankOutcome& outcome : result.ranks) {
    std::vector<logs::Record> merged = records[outcome.rank].merged();
    diagnosis_input.push_back({fmt::format("rank{}.log", outcome.rank), merged});
    evidence.add_rank(outcome.rank, merged, rank_exit(outcome, result));
  }
  gates::GateVerdict verdict =
      gates::evaluate_gate(*spec, *plan, evidence, reference ? &*reference : nullptr);

  // The first gate of a run without a stored baseline records this run's reference.
  if (verdict.passed && index == 0 && !reference) {
    const fs::path out = run_path / "baseline.json";
    baseline::CommandResult recorded = baseline::record_baseline(
        evidence.all_records(), true, out, context_.baseline_name, plan->inputs_digest);
    progress_.message(recorded.text);
  }
  if (!verdict.passed) {
    const diagnose::BaselineValues values =
        reference ? baseline_values(*reference) : diagnose::BaselineValues{};
    const diagnose::LaunchFacts facts = launch_facts(*launch_plan, result);
    diagnose::MetricInput input;
    input.logs = diagnosis_input;
    input.baseline = reference ? &values : nullptr;
    input.launch = &facts;
    input.configured.lr = cfg.train.lr;
    input.limits.idle_limit_s = cfg.launch.stall_timeout_s;
    const std::vector<diagnose::Diagnosis> diagnoses = diagnoser_.diagnose(input);
    (void)write_file_atomically(dir / "diagnosis.json", diagnose::to_json(diagnoses).dump(2));
    std::ostringstream text;
    text << result.summary() << "\n";
    diagnose::print_diagnoses(text, diagnoses);
    progress_.message(text.str());
  }
  progress_.gate_finished(gate, verdict.passed ? gates::GateStatus::kPassed
                                               : gates::GateStatus::kFailed,
                          verdict.summary());
  (void)write_file_atomically(dir / "verdict.json", gates::to_json(verdict).dump(2));

  gates::GateOutcome outcome;
  outcome.verdict = std::move(verdict);
  outcome.inputs = gates::gate_inputs(*plan, context_.trainer_binary,
                                      reference_file.value_or(fs::path()));
  return outcome;
}

}  // namespace bigmac::cli
