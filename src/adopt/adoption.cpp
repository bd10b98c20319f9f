#include "adopt/adoption.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "adopt/adoption_report.h"
#include "adopt/command_arguments.h"
#include "adopt/config_draft.h"
#include "adopt/environment.h"
#include "adopt/framework_model.h"
#include "adopt/gate_outlook.h"
#include "adopt/launcher_prefix.h"
#include "adopt/parser_record.h"
#include "adopt/program_model.h"
#include "adopt/trial_logs.h"
#include "adopt/trial_run.h"
#include "config/config.h"
#include "config/config_writer.h"
#include "core/atomic_file.h"
#include "gates/configuration_check.h"
#include "gates/gate_plan.h"
#include "launch/device_inventory.h"
#include "launch/trainer_invocation.h"
#include "launch/trainer_probe.h"
#include "proc/port_probe.h"
#include "proc/program_path.h"

namespace bigmac::adopt {
namespace fs = std::filesystem;
namespace {

/// The trial's folder: made fresh unless given, and removed at the end whatever the outcome
/// unless given (--work-dir) or kept (--keep), so tries do not pile up folders in the
/// temporary directory. Errors say where the output is, or how to keep it.
class TrialFolder {
 public:
  static Expected<TrialFolder> make(const std::string& given, bool keep) {
    TrialFolder folder;
    folder.keep_ = keep || !given.empty();
    std::error_code ec;
    if (!given.empty()) {
      folder.dir_ = given;
      fs::create_directories(folder.dir_, ec);
      // The probe appends to its file: a previous trial's lines would count twice.
      for (const char* name : {"stdout.log", "stderr.log", "probe-rank0.jsonl", "trainer-rank0.log",
                               "trial-config.toml", "adopted.toml"}) {
        std::error_code ignored;
        fs::remove(folder.dir_ / name, ignored);
      }
    } else {
      std::string pattern = (fs::temp_directory_path(ec) / "bigmac-adopt-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr)
        ec = std::error_code(errno, std::generic_category());
      folder.dir_ = pattern;
    }
    if (ec) {
      return tl::unexpected(make_error(ErrorKind::kInfrastructure,
                                       fmt::format("cannot make the trial's folder {}: {}",
                                                   folder.dir_.string(), ec.message())));
    }
    return folder;
  }
  TrialFolder() = default;
  TrialFolder(TrialFolder&& other) noexcept : dir_(std::move(other.dir_)), keep_(other.keep_) {
    other.dir_.clear();
  }
  TrialFolder& operator=(TrialFolder&&) = delete;
  ~TrialFolder() {
    std::error_code ec;
    if (!keep_ && !dir_.empty()) fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }
  bool kept() const { return keep_; }
  /// `its output is kept in DIR`, or how to keep it next time.
  std::string note(const char* what = "its output") const {
    if (keep_) return fmt::format("{} is kept in {}", what, dir_.string());
    return fmt::format("run adopt again with --keep (or --work-dir DIR) to keep {}", what);
  }

 private:
  fs::path dir_;
  bool keep_ = false;
};

// Where the first trial's probe describes the program's argparse parser.
constexpr const char* kParserRecord = "argparse.json";

// A port for the process group of the trial's one rank, above torchrun's default so that a
// run on 29500 is left alone, starting where this process's id points so that trials run side
// by side (parallel tests) try different ports first.
int trial_port() {
  constexpr int kFirst = 29600, kCount = 400;
  const int start = static_cast<int>(::getpid() % kCount);
  for (int i = 0; i < kCount; ++i) {
    const int port = kFirst + (start + i) % kCount;
    if (proc::probe_port(port).free) return port;
  }
  return kFirst + start;
}

// What every trial process gets besides its place (run_trial sets RANK, WORLD_SIZE, ...): the
// probe with its step bound, and a rendezvous of its own.
std::map<std::string, std::string> trial_environment(const fs::path& probe_dir,
                                                     const fs::path& probe_log, std::int64_t bound,
                                                     const fs::path& parser_record = {}) {
  const char* inherited = std::getenv("PYTHONPATH");
  const std::string rest = inherited ? inherited : "";
  std::map<std::string, std::string> env{
      {"PYTHONUNBUFFERED", "1"},
      {"PYTHONPATH", rest.empty() ? probe_dir.string() : probe_dir.string() + ":" + rest},
      {"BIGMAC_PROBE_LOG", probe_log.string()},
      {"BIGMAC_PROBE_MAX_STEPS", std::to_string(bound)},
      {"BIGMAC_PROBE_SPAWN_IN_PLACE", "1"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(trial_port())}};
  // The program's argparse parser, described at its first parse of the command line.
  if (!parser_record.empty()) env.emplace("BIGMAC_PROBE_ARGPARSE", parser_record.string());
  return env;
}

// The user's bigmac-bringup configuration when `--config` names one (TOML that load_config
// reads): its values go into the draft, and `{gate_config}` replaces the path. Anything else
// (the trainer's own YAML, a file that does not load) is no such configuration, and the flag is
// left as written.
struct UserConfig {
  config::Config config;
  std::string path;
};
std::optional<UserConfig> user_config(std::vector<RecognisedArgument>& arguments) {
  for (auto it = arguments.begin(); it != arguments.end(); ++it) {
    if (it->role != ArgumentRole::kConfig) continue;
    config::ConfigSources sources;
    sources.file = it->value;
    auto loaded = config::load_config(sources);
    if (loaded && fs::path(it->value).extension() == ".toml") return UserConfig{*loaded, it->value};
    arguments.erase(it);
    return std::nullopt;
  }
  return std::nullopt;
}

bool has_role(const std::vector<RecognisedArgument>& arguments, ArgumentRole role) {
  for (const RecognisedArgument& a : arguments) {
    if (a.role == role) return true;
  }
  return false;
}

Error input_error(std::string message, std::string hint) {
  return make_error(ErrorKind::kInput, std::move(message), std::move(hint));
}

std::string quoted_lines(const std::vector<std::string>& lines) {
  if (lines.empty()) return "; it printed nothing";
  std::string out = "; its last lines:";
  for (const std::string& l : lines) out += "\n    " + l;
  return out;
}

// Why the trial gave nothing to adopt: it ended or was stopped before its first step.
Error no_step(const TrialRun& run, const std::vector<std::string>& cmd, const TrialFolder& folder,
              std::int64_t asked, double timeout_s) {
  auto lines = last_lines(run.stderr_path, 8);
  if (lines.empty()) lines = last_lines(run.stdout_path, 8);
  const std::string command = fmt::format("{}", fmt::join(cmd, " "));
  const std::string kept = folder.note();
  if (run.timed_out && run.steps_seen > 0) {
    // Drafting from a part of the trial would guess its step count and its pace.
    return input_error(
        fmt::format("`{}` logged {} of the trial's {} steps before the time limit of {:.0f} s "
                    "stopped it{}",
                    command, run.steps_seen, asked, timeout_s, quoted_lines(lines)),
        "give it more time with --timeout, or fewer steps with --steps; " + kept);
  }
  if (run.timed_out) {
    return input_error(fmt::format("`{}` logged no step with a loss in {:.0f} s{}", command,
                                   run.seconds, quoted_lines(lines)),
                       "give it more time with --timeout, or fewer steps; " + kept);
  }
  const bool no_torch = std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("No module named 'torch") != std::string::npos;
  });
  return input_error(fmt::format("`{}` ended with {} after {:.1f} s, before logging any step{}",
                                 command, run.exit.describe(), run.seconds, quoted_lines(lines)),
                     std::string(no_torch ? "`bigmac-bringup env` shows which Python "
                                            "interpreters here import torch; "
                                          : "") +
                         "run the command by hand until it trains; " + kept);
}

Error no_loss(const TrialRun& run, const std::vector<std::string>& cmd, const TrialFolder& folder) {
  return input_error(
      fmt::format("`{}` printed no loss that the tool can read, and the probe saw no backward() "
                  "({} after {:.1f} s){}",
                  fmt::join(cmd, " "), run.exit.describe(), run.seconds,
                  quoted_lines(last_lines(run.stdout_path, 8))),
      fmt::format("print the loss of every optimizer step (`step 3 loss 2.31`), or write "
                  "bigmac-log lines (docs/log-contract.md); {}",
                  folder.note()));
}

// The configuration the single gate would hand the command (one process, no pipeline), with
// the trial's step count: what `{gate_config}` holds in the trial.
Expected<config::Config> single_gate_config(const config::Config& user, std::int64_t steps) {
  auto catalog = gates::GateCatalog::load(gates::stages_directory(""), user);
  if (!catalog) return tl::unexpected(catalog.error().front());
  const gates::GateSpec* single = catalog->find("single");
  if (!single) {
    return tl::unexpected(make_error(ErrorKind::kInfrastructure, "no `single` gate in the stages"));
  }
  auto plan = gates::plan_gate(*single, user);
  if (!plan) return tl::unexpected(plan.error());
  plan->config.train.max_steps = static_cast<int>(steps);
  return plan->config;
}

struct Trial {
  TrialRun run;
  TrialLogs logs;
  TrialSpec spec;
  ProgramModel model;
};

// The probe bounds the trial: with a step flag given S, the bound S + 2 lets it show whether
// the flag runs S steps, S + 1 (iterations 0..S) or is not a step count at all.
constexpr std::int64_t kBeyondFlag = 2;

Expected<Trial> run_and_read(const AdoptOptions& options, std::vector<RecognisedArgument>& args,
                             const std::optional<UserConfig>& user, const TrialFolder& trial_folder,
                             proc::ProcessRunner& runner, const launch::Clock& clock) {
  const fs::path& folder = trial_folder.dir();
  auto probe_dir = launch::probe_package_dir();
  if (!probe_dir) return tl::unexpected(probe_dir.error());
  Trial trial;
  trial.spec.work_dir = folder;
  trial.spec.probe_log = folder / "probe-rank{rank}.jsonl";
  if (has_role(args, ArgumentRole::kLogFile)) trial.spec.log_file = folder / "trainer-rank0.log";
  const fs::path trial_config = folder / "trial-config.toml";
  if (user) {
    auto cfg = single_gate_config(user->config, options.steps);
    if (!cfg) return tl::unexpected(cfg.error());
    auto written = write_file_atomically(trial_config, config::to_toml(*cfg, "adopt's trial"));
    if (!written) return tl::unexpected(written.error());
  }
  // The trial's checkpoints go into its own folder: none is left where the program would
  // resume it, none the user had is overwritten.
  auto in_folder = [](const fs::path& dir, const RecognisedArgument& a) {
    std::string name = placeholder_of(a);
    name.erase(0, std::string("{attempt_dir}").size());
    return (dir.string() + name);
  };
  trial.spec.argv = substitute(
      options.command, args, [&](const RecognisedArgument& a) -> std::optional<std::string> {
        if (a.role == ArgumentRole::kMaxSteps) return std::to_string(options.steps);
        if (a.role == ArgumentRole::kLogFile) return trial.spec.log_file.string();
        if (a.role == ArgumentRole::kConfig) return trial_config.string();
        if (a.role == ArgumentRole::kCheckpointPath) return in_folder(folder, a);
        // One process on one node, as the trial runs it.
        if (a.role == ArgumentRole::kDevices || a.role == ArgumentRole::kNodes)
          return std::string("1");
        return std::nullopt;
      });
  const bool told = has_role(args, ArgumentRole::kMaxSteps) || user.has_value();
  const std::int64_t bound = told ? options.steps + kBeyondFlag : options.steps;
  trial.spec.env =
      trial_environment(*probe_dir, trial.spec.probe_log, bound, folder / kParserRecord);
  for (const auto& [name, value] : options.env) trial.spec.env[name] = value;
  // The probe ends the program at its bound; a program it cannot bound (no probe in it, an
  // optimizer it does not see) is stopped a step later.
  trial.spec.stop_after_steps = bound + 1;
  trial.spec.timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000));
  auto run = run_trial(trial.spec, runner, clock);
  if (!run) return tl::unexpected(run.error());
  trial.run = *run;
  // A trial that ended cleanly without a counted step is read all the same: its lines and the
  // probe's records say which it lacks (a loss, or an optimizer the probe can count).
  if ((trial.run.steps_seen == 0 && !(trial.run.exited && trial.run.exit.success())) ||
      (trial.run.timed_out && trial.run.steps_seen < options.steps)) {
    return tl::unexpected(
        no_step(trial.run, options.command, trial_folder, options.steps, options.timeout_s));
  }
  auto logs = read_trial_logs({trial.spec.log_file, trial.run.stdout_path, trial.run.stderr_path,
                               for_rank(trial.spec.probe_log, 0)});
  if (!logs) return tl::unexpected(logs.error());
  trial.logs = std::move(*logs);
  // The probe runs a spawn's worker in place (BIGMAC_PROBE_SPAWN_IN_PLACE), once: workers
  // spawned for real (a spawn inside the worker) would make every gate run world_size x nprocs
  // processes, and the gates' layouts never apply.
  if (const logs::RunRecord* r = trial.logs.probe.run(); r && r->spawned_nprocs) {
    return tl::unexpected(input_error(
        fmt::format("`{}` starts {} worker processes of its own with torch.multiprocessing.spawn "
                    "that the probe could not run in place (seen in the trial's rank 0: a spawn "
                    "inside a spawned worker): the tool starts one process per rank itself, and "
                    "cannot set how many workers the program spawns, so no gate's layout would "
                    "be the one it ran",
                    fmt::join(options.command, " "), *r->spawned_nprocs),
        "run the spawned function once per process as torchrun would: call it with "
        "int(os.environ[\"LOCAL_RANK\"]) when $RANK is set (and init_process_group from the "
        "environment) instead of calling mp.spawn, then adopt that command; " +
            trial_folder.note()));
  }
  keep_one_line_per_step(trial.logs);
  // Parameters updated by hand (`p.data.add_(-lr * p.grad)`), and at most one loss printed:
  // nothing counts the steps the gates would compare.
  if (trial.logs.probe.records > 0 && trial.logs.probe.steps.empty() &&
      trial.logs.trainer.steps.size() < 2) {
    return tl::unexpected(input_error(
        fmt::format("`{}` trained without a torch.optim optimizer the probe can see (no "
                    "optimizer step in {:.1f} s) and printed {} loss line{}: there is no step to "
                    "count, compare or bring up",
                    fmt::join(options.command, " "), trial.run.seconds,
                    trial.logs.trainer.steps.size(),
                    trial.logs.trainer.steps.size() == 1 ? "" : "s"),
        fmt::format("update the parameters with a torch.optim optimizer (the probe counts its "
                    "steps), or print the loss of every step (`step 3 loss 2.31`); {}",
                    trial_folder.note())));
  }
  if (trial.logs.trainer_losses == 0 && trial.logs.probe_losses == 0)
    return tl::unexpected(no_loss(trial.run, options.command, trial_folder));
  std::string step_flag;
  for (const RecognisedArgument& a : args) {
    if (a.role == ArgumentRole::kMaxSteps) step_flag = a.flag;
  }
  measure_steps(options.steps, bound, has_role(args, ArgumentRole::kMaxSteps), step_flag, trial.run,
                trial.logs, trial.model);
  measure_distribution(trial.logs, trial.model);
  return trial;
}

// The Python interpreter of the `accelerate` program (its #! line), or "" when it is not found.
std::string accelerate_python(const std::string& program) {
  auto found = proc::find_program(program);
  return found ? shebang_interpreter(*found) : std::string();
}

// The second trial: two processes with the same flags, as torchrun starts them, to measure
// what the flags mean per process. Only for a program that forms a process group.
void run_second_trial(const AdoptOptions& options, const std::vector<RecognisedArgument>& args,
                      const fs::path& folder, proc::ProcessRunner& runner,
                      const launch::Clock& clock, Trial& trial, FrameworkModel& frameworks) {
  if (!trial.model.distributed) return;
  auto probe_dir = launch::probe_package_dir();
  if (!probe_dir) return;
  const fs::path dir = folder / "two-processes";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) {
    trial.model.second_trial_problem = "cannot make " + dir.string() + ": " + ec.message();
    return;
  }
  TrialSpec spec;
  spec.work_dir = dir;
  spec.nproc = 2;
  spec.probe_log = dir / "probe-rank{rank}.jsonl";
  if (has_role(args, ArgumentRole::kLogFile)) spec.log_file = dir / "trainer-rank{rank}.log";
  spec.argv = substitute(trial.spec.argv, args,
                         [&](const RecognisedArgument& a) -> std::optional<std::string> {
                           if (a.role == ArgumentRole::kLogFile) return spec.log_file.string();
                           if (a.role == ArgumentRole::kCheckpointPath) {
                             std::string name = placeholder_of(a);
                             name.erase(0, std::string("{attempt_dir}").size());
                             return dir.string() + name;
                           }
                           if (a.role == ArgumentRole::kDevices) return std::string("2");
                           return std::nullopt;
                         });
  const std::int64_t bound = std::min<std::int64_t>(options.steps, 3);
  spec.env = trial_environment(*probe_dir, spec.probe_log, bound);
  for (const auto& [name, value] : options.env) spec.env[name] = value;
  // What a framework takes from its environment, as the gates will set it for two processes.
  for (const auto& [name, value] : frameworks.second_trial_env) spec.env[name] = value;
  spec.stop_after_steps = bound + 1;
  spec.timeout = trial.spec.timeout;
  auto run = run_trial(spec, runner, clock);
  if (!run) {
    trial.model.second_trial_problem = run.error().format();
    return;
  }
  std::vector<TrialLogs> ranks;
  std::vector<std::vector<nlohmann::json>> framework_events;
  for (const TrialRank& r : run->ranks) {
    framework_events.push_back(read_framework_events(r.probe_log));
    auto logs = read_trial_logs({r.log_file, r.stdout_path, r.stderr_path, r.probe_log});
    if (!logs) {
      trial.model.second_trial_problem = logs.error().format();
      return;
    }
    ranks.push_back(std::move(*logs));
  }
  check_second_trial(framework_events, frameworks);
  measure_two_processes(trial.logs, ranks, *run, has_role(args, ArgumentRole::kMicroBatchSize),
                        has_role(args, ArgumentRole::kGradAccum) ||
                            frameworks.env.count("PL_TRAINER_ACCUMULATE_GRAD_BATCHES") > 0,
                        trial.model);
}

}  // namespace

namespace {

std::string format_comment(const TrialLogs& logs, const FrameworkModel& frameworks) {
  if (!frameworks.lines_not_read.empty()) {
    return "the trainer prints " + frameworks.lines_not_read +
           ": only bigmac-log lines are read, and the probe gives the steps";
  }
  if (!logs.not_per_step.empty()) {
    return "the trainer prints " + logs.not_per_step +
           ", not one line a step: only bigmac-log lines are read, and the probe gives the loss";
  }
  if (logs.format == logs::LogFormat::kAuto)
    return "the trainer prints no step line the tool reads; the probe gives the loss";
  if (logs.format == logs::LogFormat::kRegex)
    return "no built-in format reads its step lines: [logs.fields] below does";
  return "detected in " + logs.format_source + " by the trial";
}

DraftInputs draft_inputs(const AdoptOptions& options, const std::vector<std::string>& command,
                         const std::vector<RecognisedArgument>& args,
                         const std::optional<UserConfig>& user, const Trial& trial,
                         const FrameworkModel& frameworks) {
  DraftInputs in;
  in.original = options.command;
  in.command = substitute(
      command, args,
      [](const RecognisedArgument& a) -> std::optional<std::string> { return placeholder_of(a); });
  in.arguments = args;
  if (user) {
    in.user_config = &user->config;
    in.user_config_path = user->path;
  }
  in.log_format = std::string(logs::format_name(trial.logs.format));
  in.log_format_comment = format_comment(trial.logs, frameworks);
  in.frameworks = &frameworks;
  in.fields = trial.logs.proposal;
  in.trial = &trial.logs.merged;
  in.probe = &trial.logs.probe;
  in.longest_silence_s = trial.run.longest_silence_s;
  in.torchrun_found = proc::find_program("torchrun").has_value();
  in.model = &trial.model;
  return in;
}

// The draft, loaded and checked as `config check` would. The layering decides the probe from
// the command; when it would leave it off yet the trial's probe saw the training, say so.
Expected<std::pair<std::string, config::Config>> checked_draft(DraftInputs in, const Trial& trial,
                                                               const fs::path& folder) {
  for (int pass = 0; pass < 2; ++pass) {
    const std::string text = draft_text(draft_config(in));
    const fs::path file = folder / "adopted.toml";
    if (auto written = write_file_atomically(file, text); !written)
      return tl::unexpected(written.error());
    config::ConfigSources sources;
    sources.file = file.string();
    auto loaded = config::load_config(sources);
    if (!loaded) {
      return tl::unexpected(make_error(
          ErrorKind::kInfrastructure,
          fmt::format("the drafted configuration {} does not load: {} (a fault of adopt; please "
                      "report it)",
                      file.string(), loaded.error().front().format())));
    }
    if (!loaded->trainer.probe && trial.logs.probe.records > 0 && !in.probe_explicit) {
      in.probe_explicit = true;
      continue;
    }
    return std::make_pair(text, *loaded);
  }
  return tl::unexpected(make_error(ErrorKind::kInfrastructure, "adopt could not settle the probe"));
}

// Layouts the gates can run with the trial's samples per step: dp rescales the accumulation
// (an odd one cannot be halved: one process then), pp2 and shapes split each step into 4
// micro-batches unless told otherwise. True when `in` changed.
bool fit_gates(const config::Config& drafted, DraftInputs& in) {
  const std::int64_t accum = drafted.train.gradient_accumulation_steps;
  const std::int64_t micro = drafted.train.micro_batch_size;
  const std::int64_t samples = micro * accum;
  bool changed = false;
  // The dp gate halves the knob the program takes (rescale = "auto"): its accumulation, else
  // its micro-batch. An odd one cannot be halved.
  const bool accum_knob = launch::trainer_receives(drafted, "grad_accum");
  const bool micro_knob = launch::trainer_receives(drafted, "micro_batch_size");
  const bool halves = (accum_knob && accum % 2 == 0) || (micro_knob && micro % 2 == 0);
  if (!accum_knob && !micro_knob && !in.no_batch_knob) {
    in.no_batch_knob = true;
    changed = true;
  }
  if ((accum_knob || micro_knob) && !halves) {
    in.nproc_per_node = 1;
    in.nproc_note = fmt::format(
        "2 processes cannot share micro_batch_size {} × gradient_accumulation_steps {} as the "
        "program takes them; make the one it takes even and set this to match",
        micro, accum);
    changed = true;
  }
  // The pipeline gates apply only to a program with stages.
  if (samples > 0 && samples % 4 != 0 && in.model && in.model->stages) {
    in.samples_per_step = samples;
    in.pipeline_micro_batches = samples % 3 == 0 ? 3 : samples % 2 == 0 ? 2 : 1;
    changed = true;
  }
  return changed;
}

// The draft fails `config check` with the user's own values (a samples per step the gates
// cannot split): bad input, named with every error and the draft to fix.
Error rejected_draft(const Errors& errors, const TrialFolder& folder) {
  std::string list;
  for (const Error& e : errors) list += "\n    " + e.format();
  return make_error(
      ErrorKind::kConfig, fmt::format("the drafted configuration fails `config check`:{}", list),
      fmt::format("{}: apply the fixes named above (each names its key), then "
                  "`bigmac-bringup config check -c` it",
                  folder.kept() ? "the draft is kept in " + (folder.dir() / "adopted.toml").string()
                                : folder.note("the draft")));
}

gates::GateEvidence trial_evidence(const Trial& trial) {
  gates::RankEnding ending;
  ending.known = true;
  // Stopped by adopt after its steps: a stop asked for, not the trainer's failure.
  if (trial.run.exited && trial.run.exit.signal == 0) {
    ending.exit_code = trial.run.exit.exit_code;
  } else {
    ending.exit_code = 0;
  }
  gates::GateEvidence evidence;
  evidence.add_rank_log(trial.logs.merged, ending);
  return evidence;
}

}  // namespace

Expected<Adoption> adopt_command(const AdoptOptions& original, proc::ProcessRunner& runner,
                                 const launch::Clock& clock) {
  if (original.command.empty()) {
    return tl::unexpected(
        make_error(ErrorKind::kUsage, "no command to adopt",
                   "give it after --: bigmac-bringup adopt -- python train.py ..."));
  }
  // `accelerate launch ... SCRIPT ARGS`: the trials run and the draft holds the program itself,
  // and every gate runs it through accelerate launch with its own layout (docs/frameworks.md).
  const std::optional<LauncherPrefix> prefix = strip_launcher(original.command, accelerate_python);
  AdoptOptions options = original;
  if (prefix) {
    options.command = prefix->program;
    // On CPU (asked with --cpu, or no GPU here: devices "auto" is then cpu) each gate's accelerate
    // launch makes the Accelerator run on CPU in the launcher's world (ACCELERATE_USE_CPU); the
    // trials run the program without accelerate launch, so they are given that setting themselves.
    const bool cpu_asked =
        std::find(prefix->dropped.begin(), prefix->dropped.end(), "--cpu") != prefix->dropped.end();
    if (cpu_asked || launch::probe_devices().cuda_devices.empty()) {
      options.env.emplace("ACCELERATE_USE_CPU", "true");
    }
  }
  if (!(options.timeout_s > 0)) {
    return tl::unexpected(make_error(
        ErrorKind::kUsage,
        fmt::format("--timeout {}: expected a number of seconds above 0", options.timeout_s)));
  }
  if (options.steps < 1) {
    return tl::unexpected(make_error(
        ErrorKind::kUsage, fmt::format("--steps {}: expected at least 1", options.steps)));
  }
  if (auto found = proc::find_program(options.command.front()); !found) {
    Error e = found.error();
    e.kind = ErrorKind::kInfrastructure;
    e.hint =
        "give the program's path, or run adopt where it is on PATH; `bigmac-bringup env` "
        "lists the Python interpreters found and which import torch";
    return tl::unexpected(e);
  }
  for (const std::string& word : options.command) {
    if (auto token = brace_token(word)) {
      return tl::unexpected(make_error(
          ErrorKind::kUsage,
          fmt::format("the command's argument \"{}\" holds {}, which a configuration's command "
                      "reads as a placeholder",
                      shown_word(word), *token),
          "put that code in a script file and adopt `python3 SCRIPT`"));
    }
  }
  std::vector<RecognisedArgument> args = recognise_arguments(options.command);
  const std::optional<UserConfig> user = user_config(args);
  auto folder = TrialFolder::make(options.work_dir, options.keep);
  if (!folder) return tl::unexpected(folder.error());
  auto trial = run_and_read(options, args, user, *folder, runner, clock);
  if (!trial) return tl::unexpected(trial.error());
  // The program's own parser: positional arguments and flags the command leaves at their
  // defaults, added so the gates can set them (and the second trial runs with them).
  // What the frameworks it trains through decided (docs/frameworks.md): their settings that
  // come from the environment, their arithmetic, whether their printed lines can be read.
  FrameworkModel frameworks = model_frameworks(
      read_framework_events(for_rank(trial->spec.probe_log, 0)), args, trial->logs);
  if (!frameworks.lines_not_read.empty()) drop_trainer_lines(trial->logs);
  if (frameworks.distributes && !trial->model.distributed) {
    trial->model.distributed = true;
    trial->model.distributed_evidence = frameworks.distributes_evidence;
  }
  std::vector<std::string> command = options.command;
  const std::vector<std::string> first_argv = trial->spec.argv;  // what the first trial ran
  if (auto parser = read_parser_record(folder->dir() / kParserRecord)) {
    const std::size_t given = command.size();
    recognise_with_parser(*parser, command, args);
    trial->spec.argv.insert(trial->spec.argv.end(),
                            command.begin() + static_cast<std::ptrdiff_t>(given), command.end());
  }
  run_second_trial(options, args, folder->dir(), runner, clock, *trial, frameworks);
  // A flag that does not bound the steps is no step flag: the probe bounds them.
  if (trial->model.step_flag_ignored) {
    std::erase_if(args,
                  [](const RecognisedArgument& a) { return a.role == ArgumentRole::kMaxSteps; });
  }
  // A pipeline's batch flag that is the whole step's batch stays as written (docs/pipelines.md).
  for (const RecognisedArgument& a : args) {
    if (a.role == ArgumentRole::kMicroBatchSize && trial->model.stages &&
        value_fits(a.role, a.value))
      measure_step_batch(trial->logs, a.flag, std::stoll(a.value), trial->model);
  }
  if (trial->model.batch_flag_is_step) {
    std::erase_if(
        args, [](const RecognisedArgument& a) { return a.role == ArgumentRole::kMicroBatchSize; });
  }
  DraftInputs inputs = draft_inputs(options, command, args, user, *trial, frameworks);
  inputs.original = original.command;
  inputs.launcher_prefix = prefix ? &*prefix : nullptr;
  auto draft = checked_draft(inputs, *trial, folder->dir());
  if (!draft) return tl::unexpected(draft.error());
  if (!user && fit_gates(draft->second, inputs)) {
    draft = checked_draft(inputs, *trial, folder->dir());
    if (!draft) return tl::unexpected(draft.error());
  }
  auto catalog = gates::check_configuration(draft->second, gates::stages_directory(""));
  if (!catalog) {
    return tl::unexpected(rejected_draft(catalog.error(), *folder));
  }
  const std::vector<GateOutlook> outlook =
      gate_outlook(*catalog, draft->second, trial_evidence(*trial));
  ReportInputs report{original.command,
                      first_argv,
                      trial->run,
                      trial->logs,
                      args,
                      user ? user->path : "",
                      outlook,
                      trial->model,
                      folder->kept() ? folder->dir().string() : "",
                      &frameworks,
                      prefix ? &*prefix : nullptr};
  return Adoption{draft->first, adoption_report(report)};
}

}  // namespace bigmac::adopt
