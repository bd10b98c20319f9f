#include "audit/launch_command.h"

#include <map>
#include <set>
#include <string_view>

namespace bigmac::audit {
namespace {

/// Launcher flags that take no value; every other flag of a launcher takes one.
const std::map<std::string, std::set<std::string>, std::less<>>& boolean_flags() {
  static const std::map<std::string, std::set<std::string>, std::less<>> flags = {
      {"torchrun",
       {"--standalone", "--no_python", "--no-python", "--run_path", "--run-path", "-m", "--module",
        "--use_env", "--use-env"}},
      {"srun",
       {"--exclusive", "--overlap", "-l", "--label", "-u", "--unbuffered", "-K",
        "--kill-on-bad-exit", "-v", "--verbose", "-Q", "--quiet", "--pty"}},
      {"sbatch", {"--exclusive", "--wait", "-W", "--parsable", "-Q", "--quiet", "-v"}},
      {"mpirun", {"--allow-run-as-root", "--oversubscribe", "-v", "--verbose", "--tag-output"}},
      {"deepspeed", {"--no_python", "--no_local_rank", "--module", "--autotuning"}},
      {"accelerate",
       {"--multi_gpu", "--cpu", "--use_deepspeed", "--use_fsdp", "-m", "--module", "--no_python",
        "--debug"}},
  };
  return flags;
}

/// Short flags and the long name they stand for, per launcher.
const std::map<std::pair<std::string, std::string>, std::string>& short_flags() {
  static const std::map<std::pair<std::string, std::string>, std::string> flags = {
      {{"srun", "-N"}, "nodes"},
      {{"srun", "-n"}, "ntasks"},
      {{"srun", "-G"}, "gpus"},
      {{"sbatch", "-N"}, "nodes"},
      {{"sbatch", "-n"}, "ntasks"},
      {{"sbatch", "-G"}, "gpus"},
      {{"mpirun", "-np"}, "ntasks"},
      {{"mpirun", "-n"}, "ntasks"},
      {{"mpirun", "-N"}, "nproc_per_node"},
      {{"mpirun", "-npernode"}, "nproc_per_node"},
  };
  return flags;
}

std::string basename(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_flag(const ArgWord& w) {
  if (w.text.size() < 2 || w.text[0] != '-') return false;
  const char c = w.text[1];
  return !(c >= '0' && c <= '9');  // "-1" is a value
}

/// Reads launcher flags from argv[i] on; stops at the first word that is not a flag.
std::size_t read_flags(const std::string& launcher, const std::vector<ArgWord>& argv, std::size_t i,
                       LauncherCall& call) {
  const auto& booleans =
      boolean_flags().count(launcher) ? boolean_flags().at(launcher) : std::set<std::string>{};
  while (i < argv.size() && is_flag(argv[i])) {
    const ArgWord& w = argv[i];
    CommandFlag flag{w.text, std::nullopt, w.line};
    if (const auto eq = w.text.find('='); eq != std::string::npos) {
      flag.name = w.text.substr(0, eq);
      ArgWord value = w;
      value.text = w.text.substr(eq + 1);
      flag.value = value;
      ++i;
    } else if (!booleans.count(w.text) && i + 1 < argv.size()) {
      flag.value = argv[i + 1];
      i += 2;
    } else {
      ++i;
    }
    call.flags.push_back(std::move(flag));
  }
  return i;
}

/// A program's own arguments: `--name value`, `--name=value`, `--flag`, and positionals. A flag
/// followed by several numbers takes them all (nargs="+" lists: --split-points 8 16 24).
void read_program_args(const std::vector<ArgWord>& argv, std::size_t i, LaunchCommand& out) {
  while (i < argv.size()) {
    const ArgWord& w = argv[i];
    if (!is_flag(w)) {
      out.positionals.push_back(w);
      ++i;
      continue;
    }
    CommandFlag flag{w.text, std::nullopt, w.line};
    ++i;
    if (const auto eq = w.text.find('='); eq != std::string::npos) {
      flag.name = w.text.substr(0, eq);
      ArgWord value = w;
      value.text = w.text.substr(eq + 1);
      flag.value = value;
    } else {
      while (i < argv.size() && !is_flag(argv[i])) {
        if (!flag.value) {
          flag.value = argv[i];
        } else if (!argv[i].literal || !flag.value->literal ||
                   argv[i].text.find_first_not_of("0123456789,") != std::string::npos) {
          break;  // a positional argument, not one more number of a list
        } else {
          flag.value->text += " " + argv[i].text;
          flag.value->literal = flag.value->literal && argv[i].literal;
          flag.value->variable.clear();
        }
        ++i;
      }
    }
    out.flags.push_back(std::move(flag));
  }
}

bool is_python(const std::string& name) { return name.starts_with("python"); }

}  // namespace

std::string long_flag_name(const std::string& launcher, const std::string& flag) {
  auto it = short_flags().find({launcher, flag});
  return it == short_flags().end() ? std::string() : it->second;
}

LaunchCommand parse_launch_command(const std::vector<ArgWord>& argv) {
  static const std::set<std::string, std::less<>> prefixes = {"nohup",   "exec", "time",   "stdbuf",
                                                              "numactl", "env",  "command"};
  LaunchCommand out;
  std::size_t i = 0;
  while (i < argv.size()) {
    const std::string name = basename(argv[i].text);
    if (prefixes.count(name)) {
      ++i;
      while (i < argv.size() && (is_flag(argv[i]) || argv[i].text.find('=') != std::string::npos))
        ++i;
      continue;
    }
    if (name == "torchrun" || name == "srun" || name == "mpirun" || name == "mpiexec" ||
        name == "deepspeed" || name == "sbatch") {
      LauncherCall call{name == "mpiexec" ? "mpirun" : name, {}};
      i = read_flags(call.name, argv, i + 1, call);
      out.launchers.push_back(std::move(call));
      if (name == "sbatch" && i < argv.size()) {
        out.program = argv[i];
        out.shell_script = true;
        return out;
      }
      continue;
    }
    if (name == "accelerate" && i + 1 < argv.size() && argv[i + 1].text == "launch") {
      LauncherCall call{"accelerate", {}};
      i = read_flags("accelerate", argv, i + 2, call);
      out.launchers.push_back(std::move(call));
      continue;
    }
    if (is_python(name)) {
      ++i;
      while (i < argv.size() && is_flag(argv[i]) && argv[i].text != "-m" && argv[i].text != "-c") {
        i += (argv[i].text == "-X" || argv[i].text == "-W") ? 2 : 1;
      }
      if (i < argv.size() && argv[i].text == "-c") return out;
      if (i + 1 < argv.size() && argv[i].text == "-m") {
        const std::string& module = argv[i + 1].text;
        if (module == "torch.distributed.run" || module == "torch.distributed.launch") {
          LauncherCall call{"torchrun", {}};
          i = read_flags("torchrun", argv, i + 2, call);
          out.launchers.push_back(std::move(call));
          continue;
        }
        out.program = argv[i + 1];
        out.module = true;
        read_program_args(argv, i + 2, out);
        return out;
      }
      if (i < argv.size()) {
        out.program = argv[i];
        read_program_args(argv, i + 1, out);
      }
      return out;
    }
    if (name == "bash" || name == "sh" || name == "source" || name == "." || name == "zsh") {
      ++i;
      while (i < argv.size() && is_flag(argv[i])) ++i;
      if (i < argv.size()) {
        out.program = argv[i];
        out.shell_script = true;
        read_program_args(argv, i + 1, out);
      }
      return out;
    }
    if (!out.launchers.empty() || name.ends_with(".py")) {
      // A launcher starting a program directly (torchrun --no_python ./train, srun ./train.py),
      // or a module (torchrun -m torchtitan.train).
      out.program = argv[i];
      for (const CommandFlag& flag :
           out.launchers.empty() ? std::vector<CommandFlag>{} : out.launchers.back().flags) {
        out.module = out.module || flag.name == "-m" || flag.name == "--module";
      }
      read_program_args(argv, i + 1, out);
    }
    return out;
  }
  return out;
}

}  // namespace bigmac::audit
