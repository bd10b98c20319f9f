#include "cli/command_help.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <map>
#include <vector>

#include "core/edit_distance.h"
#include "core/exit_code.h"

namespace bigmac::cli {
namespace {

constexpr const char* kRunCodes =
    "Exit codes: 0 every requested gate passed; 1 a gate failed (its verdict is printed); 2 bad "
    "input (usage, configuration, unreadable file); 3 infrastructure (could not launch: missing "
    "binary, port held, permission, disk full); 130 interrupted (Ctrl-C, SIGTERM, SIGHUP: state "
    "saved, resume continues).";
constexpr const char* kReadCodes =
    "Exit codes: 0 done; 2 bad input (usage, configuration, unreadable or missing file).";

struct CommandHelp {
  const char* codes;
  const char* examples;
};

/// Per command path ("run-all", "baseline record"): its exit codes and examples.
const std::map<std::string, CommandHelp>& command_help() {
  static const std::map<std::string, CommandHelp> table = {
      {"run-all",
       {kRunCodes,
        "  bigmac-bringup run-all -c bringup.toml\n"
        "  bigmac-bringup run-all -c bringup.toml --until dp --set train.max_steps=10"}},
      {"run",
       {kRunCodes,
        "  bigmac-bringup run dp              # gate dp of reports/latest\n"
        "  bigmac-bringup run 3 --run-dir reports/20261202-071819"}},
      {"resume",
       {kRunCodes,
        "  bigmac-bringup resume                       # reports/latest, after the fix\n"
        "  bigmac-bringup resume reports/20261202-071819 --set launch.master_port=29600"}},
      {"status",
       {"Exit codes: 0 printed; 2 no run there (no state.json) or its state is damaged.",
        "  bigmac-bringup status\n  bigmac-bringup status reports/20261202-071819 --json"}},
      {"report",
       {kReadCodes,
        "  bigmac-bringup report                       # rewrite reports/latest/report.html\n"
        "  bigmac-bringup report --format md -o -      # summary.md to stdout"}},
      {"plan",
       {kReadCodes,
        "  bigmac-bringup plan -c bringup.toml\n  bigmac-bringup plan -c bringup.toml -v --json"}},
      {"config",
       {kReadCodes,
        "  bigmac-bringup config check -c bringup.toml\n"
        "  bigmac-bringup config show -c bringup.toml --provenance"}},
      {"config check",
       {"Exit codes: 0 valid; 2 every violation printed.",
        "  bigmac-bringup config check -c bringup.toml"}},
      {"config show", {kReadCodes, "  bigmac-bringup config show -c bringup.toml --provenance"}},
      {"baseline",
       {kReadCodes,
        "  bigmac-bringup baseline record\n  bigmac-bringup baseline diff a.json b.json"}},
      {"baseline record",
       {"Exit codes: 0 recorded; 1 the run's first gate did not pass; 2 bad input.",
        "  bigmac-bringup baseline record reports/20261202-071819"}},
      {"baseline show", {kReadCodes, "  bigmac-bringup baseline show baselines/demo-cpu.json"}},
      {"baseline diff",
       {"Exit codes: 0 the baselines agree; 1 they differ; 2 bad input.",
        "  bigmac-bringup baseline diff baselines/a.json baselines/b.json"}},
      {"compare",
       {"Exit codes: 0 the logs match the baseline (or drift within it); 1 a regression; 2 bad "
        "input.",
        "  bigmac-bringup compare rank0.log --baseline baselines/demo-cpu.json"}},
      {"parse", {kReadCodes, "  bigmac-bringup parse rank0.log rank1.log"}},
      {"diagnose",
       {"Exit codes: 0 a diagnosis matched; 1 nothing matched; 2 bad input.",
        "  bigmac-bringup diagnose job.err\n  bigmac-bringup diagnose logs/ --json"}},
      {"audit",
       {"Exit codes: 0 no finding; 1 findings printed; 2 bad input.",
        "  bigmac-bringup audit .\n  bigmac-bringup audit scripts/train.sbatch --json"}},
      {"adopt",
       {"Exit codes: 0 configuration drafted; 2 the command cannot be adopted as it is (the "
        "reason and the change to make are printed) or bad input; 3 the trial could not start.",
        "  bigmac-bringup adopt -o bringup.toml -- python3 train.py --lr 3e-4\n"
        "  bigmac-bringup adopt -o bringup.toml -- torchrun --nproc_per_node 2 train.py"}},
      {"env",
       {"Exit codes: 0 reported (what is missing is said in the report); 2 bad input.",
        "  bigmac-bringup env\n  bigmac-bringup env -c bringup.toml --json"}},
      {"completion",
       {"Exit codes: 0 printed; 2 an unknown shell.",
        "  bigmac-bringup completion fish > ~/.config/fish/completions/bigmac-bringup.fish\n"
        "  source <(bigmac-bringup completion bash)       # in ~/.bashrc"}},
  };
  return table;
}

/// Metavars by option name; anything else CLI11 would call TEXT is VALUE.
std::string metavar_for(const CLI::Option& option) {
  static const std::map<std::string, std::string> by_name = {
      {"config", "FILE"}, {"set", "KEY=VALUE"}, {"run-dir", "DIR"},     {"baseline", "FILE"},
      {"stages", "DIR"},  {"from", "GATE"},     {"until", "GATE"},      {"out", "FILE"},
      {"output", "FILE"}, {"work-dir", "DIR"},  {"run_dir", "RUN_DIR"}, {"gate", "GATE"},
      {"file", "FILE"},   {"logs", "LOG"},      {"paths", "PATH"},      {"path", "PATH"}};
  for (const std::string& name : option.get_lnames()) {
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
  }
  if (auto it = by_name.find(option.get_name(true, false)); it != by_name.end()) return it->second;
  return "VALUE";
}

std::string path_of(const CLI::App* app) {
  std::string path;
  for (const CLI::App* a = app; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    path = a->get_name() + (path.empty() ? "" : " " + path);
  }
  return path;
}

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

void finish_command(CLI::App& cmd) {
  for (CLI::Option* option : cmd.get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag
    const std::string type = option->get_type_name();
    if (type == "TEXT" || type == "TEXT ...") {
      option->type_name(metavar_for(*option) + (type == "TEXT ..." ? " ..." : ""));
    }
  }
  const auto& table = command_help();
  if (auto it = table.find(path_of(&cmd)); it != table.end()) {
    cmd.footer(fmt::format("{}\n\nExamples:\n{}", it->second.codes, it->second.examples));
  }
  for (CLI::App* sub : subcommands_of(cmd)) finish_command(*sub);
}

/// The options of `cmd` as typed: "--until", "-c".
std::vector<std::string> option_words(const CLI::App& cmd) {
  std::vector<std::string> words;
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->get_positional() && option->get_lnames().empty() && option->get_snames().empty())
      continue;
    for (const std::string& l : option->get_lnames()) words.push_back("--" + l);
    for (const std::string& s : option->get_snames()) words.push_back("-" + s);
  }
  return words;
}

/// The subcommand the parse reached (the deepest one selected).
CLI::App* reached(CLI::App& app) {
  CLI::App* level = &app;
  for (;;) {
    const auto chosen = level->get_subcommands();
    if (chosen.empty()) return level;
    level = chosen.front();
  }
}

std::string suggestion(std::string_view arg, const std::vector<std::string>& options) {
  const std::string_view name = arg.substr(0, arg.find('='));
  std::vector<std::string> prefixed;
  for (const std::string& o : options) {
    if (o.size() > name.size() && o.compare(0, name.size(), name) == 0) prefixed.push_back(o);
  }
  if (prefixed.size() == 1) return prefixed.front();
  const std::vector<std::string_view> views(options.begin(), options.end());
  return closest_match(name, views).value_or("");
}

constexpr const char* kGateNames = "single dp pp2 shapes target 1 2 3 4 5";

std::string bash_script(CLI::App& app) {
  std::string subs, opts;
  std::vector<CLI::App*> todo{&app};
  while (!todo.empty()) {
    CLI::App* cmd = todo.back();
    todo.pop_back();
    // Bash's associative arrays take no empty key: the key is the command line so far.
    const std::string key = "bigmac-bringup" + (path_of(cmd).empty() ? "" : " " + path_of(cmd));
    std::vector<std::string> names;
    for (CLI::App* sub : subcommands_of(*cmd)) {
      names.push_back(sub->get_name());
      todo.push_back(sub);
    }
    if (!names.empty()) subs += fmt::format("    [\"{}\"]=\"{}\"\n", key, fmt::join(names, " "));
    const auto words = option_words(*cmd);
    opts += fmt::format("    [\"{}\"]=\"{}\"\n", key, fmt::join(words, " "));
  }
  return fmt::format(R"(# bash completion for bigmac-bringup (bigmac-bringup completion bash)
_bigmac_bringup() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} path=bigmac-bringup w i
  local -A subs=(
{}  )
  local -A opts=(
{}  )
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    [[ " ${{subs[$path]}} " == *" $w "* ]] && path="$path $w"
  done
  local words
  case "$prev" in
    --from|--until) words="{}" ;;
    -c|--config|--baseline|-o|--out|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --run-dir|--stages|--work-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --color) words="auto always never" ;;
    --format) words="html md json junit" ;;
    *)
      if [[ "$cur" == -* ]]; then
        words=${{opts[$path]}}
      elif [[ -n "${{subs[$path]}}" ]]; then
        words=${{subs[$path]}}
      elif [[ "$path" == "bigmac-bringup run" ]]; then
        words="{}"
      elif [[ "$path" == "bigmac-bringup completion" ]]; then
        words="bash zsh fish"
      else
        COMPREPLY=($(compgen -f -- "$cur"))
        return
      fi
      ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _bigmac_bringup bigmac-bringup
)",
                     subs, opts, kGateNames, kGateNames);
}

std::string fish_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string fish_script(CLI::App& app) {
  std::string out = "# fish completion for bigmac-bringup (bigmac-bringup completion fish)\n";
  out += "complete -c bigmac-bringup -f\n";
  for (CLI::App* cmd : subcommands_of(app)) {
    out += fmt::format("complete -c bigmac-bringup -n __fish_use_subcommand -a {} -d {}\n",
                       cmd->get_name(), fish_quote(cmd->get_description()));
    const std::string seen = "__fish_seen_subcommand_from " + cmd->get_name();
    for (CLI::App* sub : subcommands_of(*cmd)) {
      out += fmt::format("complete -c bigmac-bringup -n {} -a {} -d {}\n", fish_quote(seen),
                         sub->get_name(), fish_quote(sub->get_description()));
    }
    for (const CLI::Option* option : cmd->get_options()) {
      std::string spec;
      for (const std::string& l : option->get_lnames()) spec += " -l " + l;
      for (const std::string& s : option->get_snames()) spec += " -s " + s;
      if (spec.empty()) continue;
      const bool takes_value = option->get_type_size() != 0;
      out += fmt::format("complete -c bigmac-bringup -n {}{}{} -d {}\n", fish_quote(seen), spec,
                         takes_value ? " -r -F" : "", fish_quote(option->get_description()));
    }
  }
  out += fmt::format("complete -c bigmac-bringup -n {} -a {}\n",
                     fish_quote("__fish_seen_subcommand_from run; or __fish_contains_opt from "
                                "until"),
                     fish_quote(kGateNames));
  return out;
}

}  // namespace

void finish_help(CLI::App& app) {
  for (CLI::App* sub : subcommands_of(app)) finish_command(*sub);
}

std::optional<std::string> unknown_option_message(CLI::App& app, const CLI::ParseError& error) {
  // The error's name is the command's when CLI11 names one; its type says what it is.
  if (dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) return std::nullopt;
  CLI::App* cmd = reached(app);
  // CLI11 hands what a command does not know up to the top: ask every level.
  const std::vector<std::string> extras = app.remaining(true);
  const std::vector<std::string> options = option_words(*cmd);
  const std::string where = "bigmac-bringup" + (path_of(cmd).empty() ? "" : " " + path_of(cmd));
  std::string unknown, unexpected;
  for (const std::string& arg : extras) {
    if (arg.size() > 1 && arg.front() == '-') {
      const std::string near = suggestion(arg, options);
      unknown += fmt::format("{}{}: unknown option '{}'{}", unknown.empty() ? "" : "\n", where, arg,
                             near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near));
    } else {
      unexpected += (unexpected.empty() ? "'" : ", '") + arg + "'";
    }
  }
  // An unknown option's value is an extra too ("--unt dp"): name the option, not its value.
  std::string message = unknown;
  if (message.empty() && !unexpected.empty()) {
    message = fmt::format("{}: unexpected argument{} {}", where,
                          unexpected.find(", ") == std::string::npos ? "" : "s", unexpected);
  }
  if (message.empty()) return std::nullopt;
  return message + fmt::format("\n{} --help lists what it takes", where);
}

std::optional<std::string> completion_script(CLI::App& app, std::string_view shell) {
  if (shell == "bash") return bash_script(app);
  // zsh runs bash completion functions through bashcompinit.
  if (shell == "zsh") {
    return "# zsh completion for bigmac-bringup (bigmac-bringup completion zsh)\n"
           "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" +
           bash_script(app);
  }
  if (shell == "fish") return fish_script(app);
  return std::nullopt;
}

void add_completion_command(CLI::App& app, int& exit_code) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("completion", "Print a shell completion script for bash, zsh or fish");
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}))
      ->type_name("SHELL");
  cmd->callback([&app, shell, &exit_code] {
    auto script = completion_script(app, *shell);
    if (!script) {
      std::cerr << "bigmac-bringup: error: completion: unknown shell '" << *shell
                << "' (bash, zsh or fish)\n";
      exit_code = to_int(ExitCode::kBadInput);
      return;
    }
    std::cout << *script;
    exit_code = 0;
  });
}

}  // namespace bigmac::cli
