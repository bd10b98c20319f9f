#include "adopt/config_draft.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/json_quote.h"

namespace bigmac::adopt {
namespace {
namespace fs = std::filesystem;

DraftTable& table(ConfigDraft& draft, const std::string& name) {
  for (DraftTable& t : draft.tables) {
    if (t.name == name) return t;
  }
  draft.tables.push_back(DraftTable{name, "", {}});
  return draft.tables.back();
}

// Sets `table.key`, replacing a value set before (the later source wins).
void set(ConfigDraft& draft, const std::string& key, std::string value, std::string comment) {
  const std::size_t dot = key.find('.');
  DraftTable& t = table(draft, key.substr(0, dot));
  const std::string name = key.substr(dot + 1);
  for (DraftValue& v : t.values) {
    if (v.key == name) {
      v = DraftValue{name, std::move(value), std::move(comment)};
      return;
    }
  }
  t.values.push_back(DraftValue{name, std::move(value), std::move(comment)});
}

std::string number_text(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string toml_value(const config::Value& value) {
  struct {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return number_text(d); }
    std::string operator()(const std::string& s) const { return toml_string(s); }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::vector<std::string> quoted;
      for (const std::string& s : v) quoted.push_back(toml_string(s));
      return fmt::format("[{}]", fmt::join(quoted, ", "));
    }
  } visit;
  return std::visit(visit, value);
}

// The user's own configuration (`--config FILE`): every value its file sets, except the
// [trainer] table, which adopt writes itself.
void copy_user_config(ConfigDraft& draft, const DraftInputs& in) {
  if (!in.user_config) return;
  for (const config::Setting& s : in.user_config->settings.entries) {
    if (s.origin.kind != config::SourceKind::kFile || s.key.rfind("trainer.", 0) == 0) continue;
    if (s.key.find('.') == std::string::npos) continue;
    set(draft, s.key, toml_value(s.value), "from " + in.user_config_path);
  }
}

// backward() calls of the first step the probe counted (the trainer's own step lines, merged
// over the probe's, do not carry the count).
// None when the count changes from step to step (a GAN: the second optimizer's backward()
// falls into the first one's next step): that is no accumulation.
std::optional<std::int64_t> measured_accum(const logs::RankLog* probe) {
  if (!probe) return std::nullopt;
  std::optional<std::int64_t> same;
  for (const logs::StepRecord& step : probe->steps) {
    for (const auto& [name, value] : step.extra) {
      if (name != "loss_count" || value < 1) continue;
      if (same && *same != static_cast<std::int64_t>(value)) return std::nullopt;
      same = static_cast<std::int64_t>(value);
    }
  }
  return same;
}

std::optional<std::int64_t> measured_micro(const logs::RankLog* trial) {
  if (!trial || !trial->batch()) return std::nullopt;
  const logs::BatchRecord& b = *trial->batch();
  if (b.micro_batch_size > 0) return b.micro_batch_size;
  if (!b.input_shape.empty() && b.input_shape.front() > 0) return b.input_shape.front();
  return std::nullopt;
}

// The [train] values the gates hand to the trainer: from the command's flags, else what the
// trial measured (the gates then cannot change it), else the schema default.
void train_values(ConfigDraft& draft, const DraftInputs& in) {
  const bool gate_config =
      std::any_of(in.arguments.begin(), in.arguments.end(),
                  [](const RecognisedArgument& a) { return a.role == ArgumentRole::kConfig; });
  const std::string not_handed = "the command takes no flag for it, so the gates cannot change it";
  if (!gate_config) {
    if (auto micro = measured_micro(in.trial)) {
      set(draft, "train.micro_batch_size", std::to_string(*micro),
          "measured in the trial (the first input's batch dimension); " + not_handed);
    }
    if (auto accum = measured_accum(in.probe)) {
      set(draft, "train.gradient_accumulation_steps", std::to_string(*accum),
          "measured in the trial (backward() calls per step); " + not_handed);
    } else {
      // bigmac-train's default of 4 is no program's: one backward() a step unless measured.
      set(draft, "train.gradient_accumulation_steps", "1",
          "not measured (no step, or backward() calls that change from step to step); " +
              not_handed);
    }
    if (in.trial && in.trial->run() && in.trial->run()->seed != 0) {
      set(draft, "train.seed", std::to_string(in.trial->run()->seed),
          "measured in the trial (torch.manual_seed); " + not_handed);
    }
    // The largest lr of the trial: a warmup starts at 0, a decay ends there.
    std::optional<double> lr;
    if (in.trial) {
      for (const logs::StepRecord& s : in.trial->steps) {
        if (s.lr && (!lr || *s.lr > *lr)) lr = s.lr;
      }
    }
    if (lr && *lr > 0) {
      set(draft, "train.lr", number_text(*lr),
          "measured in the trial (its largest lr); " + not_handed);
    }
  }
  for (const RecognisedArgument& a : in.arguments) {
    const std::string key = setting_key(a.role);
    if (key.empty()) continue;
    std::string note = fmt::format("{} -> {}", shown_argument(a), placeholder(a.role));
    if (a.role == ArgumentRole::kMaxSteps) {
      // The flag's value was the program's full run; a gate runs a few steps.
      set(draft, key, "20",
          fmt::format("each gate's optimizer steps ({} {} -> {}; the probe ends every gate "
                      "there)",
                      a.flag, a.value, placeholder(a.role)));
      continue;
    }
    if (a.role == ArgumentRole::kMicroBatchSize)
      note += in.model && in.model->batch_scope ? "" : ": one process's micro-batch (not measured)";
    set(draft, key, a.role == ArgumentRole::kLr ? number_text(std::stod(a.value)) : a.value, note);
  }
}

// What the probe read of a pipeline's stages (docs/pipelines.md): the gates' schedule, layers
// and micro-batches are the program's own, and a program whose every process is a stage runs
// its target as pp = processes (the dp gate does not apply).
void stage_values(ConfigDraft& draft, const ProgramModel& m) {
  if (m.schedule && (*m.schedule == "gpipe" || *m.schedule == "1f1b")) {
    set(draft, "parallel.schedule", toml_string(*m.schedule), m.schedule_evidence);
  }
  if (m.num_layers) {
    set(draft, "model.num_layers", std::to_string(*m.num_layers), m.layers_evidence);
  }
  if (m.micro_batches && *m.micro_batches != 4) {
    const std::string why = fmt::format(
        "each stage ran {} micro-batches a step in the trial, and the program splits its batch "
        "itself",
        *m.micro_batches);
    set(draft, "gates.pp2.micro_batches", std::to_string(*m.micro_batches), why);
    set(draft, "gates.shapes.micro_batches", std::to_string(*m.micro_batches), why);
  }
  if (m.batch_flag_is_step) {
    // The flag is not handed over (left as written): say why where its scope would be.
    set(draft, "trainer.batch_scope", "'process'", m.batch_flag_evidence);
  }
  if (m.stage_per_process) {
    set(draft, "launch.nproc_per_node", "2",
        "every process is a pipeline stage: the target runs pp = processes (parallel.pp_size), "
        "and the dp gate does not apply; raise both together");
  }
}

// The program model: how the program reads what the gates hand it, as the trials measured it.
void model_values(ConfigDraft& draft, const DraftInputs& in) {
  if (!in.model) return;
  const ProgramModel& m = *in.model;
  if (m.batch_scope) {
    set(draft, "trainer.batch_scope", toml_string(*m.batch_scope), m.batch_evidence);
  }
  if (m.accum_scope) {
    set(draft, "trainer.accum_scope", toml_string(*m.accum_scope), m.accum_evidence);
  }
  if (m.max_steps_offset) {
    set(draft, "trainer.max_steps_offset", std::to_string(*m.max_steps_offset), m.steps_evidence);
  }
  if (m.printing_ranks.size() > 1) {
    set(draft, "trainer.loss_rank", "0",
        fmt::format("ranks {} each print their own loss: rank 0's is the run's",
                    fmt::join(m.printing_ranks, ", ")));
  }
  if (!m.resumed.empty()) {
    std::vector<std::string> paths;
    std::error_code ec;
    const fs::path here = fs::current_path(ec);
    for (const std::string& p : m.resumed) {
      const fs::path rel = ec ? fs::path(p) : fs::path(p).lexically_relative(here);
      const bool inside = !rel.empty() && *rel.begin() != "..";
      paths.push_back(toml_string(inside ? rel.string() : p));
    }
    set(draft, "trainer.fresh_paths", fmt::format("[{}]", fmt::join(paths, ", ")),
        fmt::format("the second trial resumed {}, which the first one wrote, and no flag moves "
                    "it: each gate sets it aside and puts it back after",
                    fmt::join(m.resumed, ", ")));
  }
  if (m.stages) {
    set(draft, "parallel.pp_size", "2",
        m.stages_evidence + "; set your target's stage count (pp2 and shapes apply)");
    stage_values(draft, m);
  }
}

void launch_values(ConfigDraft& draft, const DraftInputs& in) {
  set(draft, "launch.nnodes", "1", "");
  set(draft, "launch.nproc_per_node", std::to_string(in.nproc_per_node),
      in.nproc_note.empty() ? "the dp gate's processes; raise it to the GPUs of one node"
                            : in.nproc_note);
  set(draft, "launch.devices", "\"auto\"", "cuda when the host has GPUs, else cpu");
  set(draft, "launch.backend", "\"auto\"", "nccl on cuda, gloo on cpu");
  set(draft, "launch.launcher", in.torchrun_found ? "\"torchrun\"" : "\"builtin\"",
      in.torchrun_found ? "torchrun starts the ranks; \"builtin\" needs no torchrun"
                        : "no torchrun on PATH: the tool starts the ranks itself");
  if (in.launcher_prefix) {
    const LauncherPrefix& l = *in.launcher_prefix;
    set(draft, "launch.launcher", "\"accelerate\"",
        "the command ran `accelerate launch`: each gate runs it with its own processes");
    if (!l.config_file.empty()) {
      set(draft, "launch.accelerate.config_file", toml_string(l.config_file),
          "the command's --config_file");
    }
    if (!l.extra_args.empty()) {
      std::vector<std::string> words;
      for (const std::string& w : l.extra_args) words.push_back(toml_string(w));
      set(draft, "launch.accelerate.extra_args", fmt::format("[{}]", fmt::join(words, ", ")),
          "the command's other accelerate launch options");
    }
  }
  // The watchdog's floor must exceed the quiet spells a healthy run has (start-up after the
  // first step, leaving the process group at the end), or a slow exit reads as a stall.
  const double floor = std::ceil(std::max(5.0, 3 * in.longest_silence_s));
  if (floor > 5) {
    set(draft, "launch.stall_min_s", number_text(floor),
        fmt::format("the trial went {:.1f} s without output between its first step and its "
                    "end; three times that",
                    in.longest_silence_s));
  }
  if (floor > 60) set(draft, "launch.stall_timeout_s", number_text(floor), "");
  if (in.pipeline_micro_batches > 0) {
    const std::string why = fmt::format(
        "{} samples per step split into {} pipeline micro-batches (the gate's 4 do not divide "
        "them)",
        in.samples_per_step, in.pipeline_micro_batches);
    set(draft, "gates.pp2.micro_batches", std::to_string(in.pipeline_micro_batches), why);
    set(draft, "gates.shapes.micro_batches", std::to_string(in.pipeline_micro_batches), why);
  }
  if (in.no_batch_knob) {
    const std::string why =
        "the program takes neither its batch size nor its accumulation from the gates: each "
        "rank runs its whole step, and samples_per_step says so";
    set(draft, "gates.dp.rescale", "\"none\"", why);
    set(draft, "gates.target.rescale", "\"none\"", why);
  }
  set(draft, "parallel.pp_size", "1",
      in.model && in.model->second_trial
          ? "the target layout has no pipeline stages: pp2 and shapes do not apply (the "
            "trial's two processes exchanged no tensor point to point)"
          : "the target layout has no pipeline stages: pp2 and shapes do not apply; set your "
            "target's stage count if it has any");
  set(draft, "parallel.tp_size", "1", "");
}

// A framework's settings from its environment (docs/frameworks.md): [trainer.env] with the
// gates' placeholders, and the [train] value such a variable hands over says so.
void framework_values(ConfigDraft& draft, const DraftInputs& in) {
  if (!in.frameworks) return;
  for (const auto& [name, variable] : in.frameworks->env) {
    set(draft, "trainer.env." + name, toml_string(variable.value), variable.comment);
    if (variable.value != "{grad_accum}") continue;
    for (DraftValue& v : table(draft, "train").values) {
      if (v.key == "gradient_accumulation_steps") {
        v.comment = fmt::format("measured in the trial (backward() calls per step); {} -> {}", name,
                                variable.value);
      }
    }
  }
}

void trainer_values(ConfigDraft& draft, const DraftInputs& in) {
  set(draft, "model.num_layers", "4",
      "only the pipeline gates (pp2, shapes, target) read [model]: set your model's");
  copy_user_config(draft, in);
  train_values(draft, in);
  set(draft, "trainer.kind", "\"command\"", "");
  model_values(draft, in);
  std::vector<std::string> words;
  for (const std::string& w : in.command) words.push_back(toml_string(w));
  set(draft, "trainer.command", fmt::format("[{}]", fmt::join(words, ", ")),
      "one process's argv; the gates fill the {placeholders}");
  set(draft, "trainer.log_format", toml_string(in.log_format), in.log_format_comment);
  framework_values(draft, in);
  if (in.probe_explicit) {
    set(draft, "trainer.probe", "true",
        "the trial's probe events fill what the trainer does not log (docs/probe.md)");
  }
}

}  // namespace

std::string toml_string(const std::string& text) {
  // A literal string holds no ' and no control character (TOML 1.0); else a basic string.
  const bool literal = std::none_of(text.begin(), text.end(), [](char c) {
    return c == '\'' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (literal) return "'" + text + "'";
  return quote_json(text);  // a JSON string is a TOML basic string
}

std::string shown_word(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t\n\r'\"\\") == std::string::npos) return word;
  return toml_string(word);
}

ConfigDraft draft_config(const DraftInputs& inputs) {
  ConfigDraft draft;
  draft.original = inputs.original;
  for (const char* name : {"launch", "parallel", "train", "model", "trainer", "gates"})
    table(draft, name);
  launch_values(draft, inputs);
  trainer_values(draft, inputs);
  draft.fields = inputs.fields;
  if (draft.fields) draft.one_based_counter = draft.fields->fields.count("step") > 0;
  return draft;
}

std::string draft_text(const ConfigDraft& draft) {
  std::vector<std::string> original;
  for (const std::string& w : draft.original) original.push_back(shown_word(w));
  std::string out = fmt::format(
      "# Written by `bigmac-bringup adopt` from the command\n#   {}\n# A configuration to start "
      "from: each value says where it came from. Check them, then\n#   bigmac-bringup run-all -c "
      "THIS_FILE --until single\n# (docs/adopt.md)\n",
      fmt::join(original, " "));
  for (const DraftTable& t : draft.tables) {
    if (t.values.empty()) continue;
    out += "\n";
    if (!t.note.empty()) out += "# " + t.note + "\n";
    out += "[" + t.name + "]\n";
    for (const DraftValue& v : t.values) {
      const std::string line = v.key + " = " + v.value;
      out += v.comment.empty() ? line + "\n" : fmt::format("{:<36}# {}\n", line + " ", v.comment);
    }
  }
  if (draft.fields) {
    out += "\n# The trainer's step lines, read with these regexes (one capture each), as in\n#   ";
    out += draft.fields->example + "\n";
    if (draft.one_based_counter)
      out += "# `step` counts from 1: its first line is global_step 0.\n";
    out += "[logs.fields]\n";
    for (const auto& [field, regex] : draft.fields->fields) {
      out += field + " = " + toml_string(regex) + "\n";
    }
    for (const auto& [name, regex] : draft.fields->unmapped) {
      out += fmt::format(
          "# {} = {}   # `{}` is not a known field: if it is the samples per step (micro x accum x "
          "processes), name it samples_per_step\n",
          "samples_per_step", toml_string(regex), name);
    }
  }
  return out;
}

}  // namespace bigmac::adopt
