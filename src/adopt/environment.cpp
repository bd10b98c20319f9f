#include "adopt/environment.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "core/json_quote.h"
#include "launch/launcher_commands.h"
#include "launch/trainer_probe.h"
#include "proc/command_output.h"
#include "proc/port_probe.h"
#include "proc/program_path.h"

extern char** environ;

namespace bigmac::adopt {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr int kDefaultMasterPort = 29500;  // torchrun's and torch.distributed's default
constexpr const char* kDefaultPython = "/usr/bin/python3";
constexpr const char* kAnswerMark = "BIGMAC_ENV ";

// Asked once per interpreter; argv[1] is the probe folder (may be empty). Every part catches
// its own failure, so one answer line always comes back from a working interpreter.
constexpr const char* kQuery = R"PY(
import json, os, sys
def err(e):
    return "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")
out = {"python": sys.version.split()[0], "executable": sys.executable}
probe_dir = sys.argv[1] if len(sys.argv) > 1 else ""
out["probe"] = {"imports": False}
if probe_dir:
    sys.path.insert(0, probe_dir)
    try:
        import importlib
        mod = importlib.import_module("bigmac_probe")
        for name in ("import_hook", "patch_set", "probe", "torch_patches"):
            importlib.import_module("bigmac_probe." + name)
        out["probe"] = {"imports": True, "version": str(getattr(mod, "__version__", ""))}
    except BaseException as e:
        out["probe"] = {"imports": False, "error": err(e)}
    finally:
        sys.path.remove(probe_dir)
t = {"importable": False}
try:
    import torch
    t = {"importable": True, "version": str(torch.__version__),
         "location": os.path.dirname(os.path.abspath(torch.__file__)),
         "cuda_version": torch.version.cuda or ""}
    try:
        t["cuda_available"] = bool(torch.cuda.is_available())
        t["device_count"] = int(torch.cuda.device_count()) if t["cuda_available"] else 0
        t["devices"] = [torch.cuda.get_device_name(i) for i in range(t["device_count"])]
    except BaseException as e:
        t["device_error"] = err(e)
    try:
        if not hasattr(torch._C, "_nccl_version"):
            t["nccl_error"] = "torch built without NCCL"
        else:
            v = torch.cuda.nccl.version()
            t["nccl_version"] = ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v)
    except BaseException as e:
        t["nccl_error"] = err(e)
    import torch.distributed as dist
    t["distributed_available"] = bool(dist.is_available())
    if dist.is_available():
        t["gloo_available"] = bool(dist.is_gloo_available())
        t["nccl_available"] = bool(dist.is_nccl_available())
except BaseException as e:
    t["error"] = err(e)
out["torch"] = t
sys.stdout.write("BIGMAC_ENV " + json.dumps(out) + "\n")
)PY";

std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string join_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) {
    if (!text.empty()) text += ' ';
    const bool plain = !w.empty() && w.find_first_of(" \t\"'\\$") == std::string::npos;
    text += plain ? w : quote_json(w);
  }
  return text;
}

bool is_python_name(const std::string& program) {
  const std::string base = fs::path(program).filename().string();
  return base.rfind("python", 0) == 0 &&
         base.find_first_not_of("0123456789.", std::string_view("python").size()) ==
             std::string::npos;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

std::string first_line_of(const std::string& text) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return {};
  const std::size_t end = text.find('\n', start);
  std::string line = text.substr(start, end == std::string::npos ? end : end - start);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// A traceback's last line is the exception.
std::string last_line_of(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     start == std::string::npos ? end + 1 : end - start);
}

std::string text_of(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag_of(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

void read_answer(const std::string& out, InterpreterFacts& facts) {
  std::size_t at = out.rfind(kAnswerMark);
  if (at == std::string::npos || (at > 0 && out[at - 1] != '\n')) {
    facts.problem = "it printed no answer";
    return;
  }
  const std::size_t begin = at + std::string_view(kAnswerMark).size();
  const std::size_t end = out.find('\n', begin);
  const Json j =
      Json::parse(out.substr(begin, end == std::string::npos ? end : end - begin), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    facts.problem = "its answer was not JSON";
    return;
  }
  facts.python_version = text_of(j, "python");
  facts.executable = text_of(j, "executable");
  if (auto p = j.find("probe"); p != j.end() && p->is_object()) {
    facts.probe_imports = flag_of(*p, "imports");
    facts.probe_version = text_of(*p, "version");
    facts.probe_error = text_of(*p, "error");
  }
  auto t = j.find("torch");
  if (t == j.end() || !t->is_object()) return;
  TorchFacts& torch = facts.torch;
  torch.importable = flag_of(*t, "importable");
  torch.error = text_of(*t, "error");
  torch.version = text_of(*t, "version");
  torch.location = text_of(*t, "location");
  torch.cuda_version = text_of(*t, "cuda_version");
  torch.cuda_available = flag_of(*t, "cuda_available");
  torch.nccl_version = text_of(*t, "nccl_version");
  torch.nccl_error = text_of(*t, "nccl_error");
  torch.distributed_available = flag_of(*t, "distributed_available");
  torch.gloo_available = flag_of(*t, "gloo_available");
  torch.nccl_available = flag_of(*t, "nccl_available");
  torch.device_error = text_of(*t, "device_error");
  if (auto n = t->find("device_count"); n != t->end() && n->is_number_integer())
    torch.device_count = n->get<int>();
  if (auto d = t->find("devices"); d != t->end() && d->is_array()) {
    for (const Json& name : *d) {
      if (name.is_string()) torch.devices.push_back(name.get<std::string>());
    }
  }
}

InterpreterFacts ask_interpreter(const std::string& name, const std::string& origin,
                                 const std::string& probe_dir,
                                 const std::map<std::string, std::string>& env,
                                 std::chrono::milliseconds limit) {
  InterpreterFacts facts;
  facts.name = name;
  facts.origin = origin;
  auto found = proc::find_program(name);
  if (!found) {
    facts.problem = "not found: " + found.error().message;
    return facts;
  }
  facts.path = *found;
  auto ran = proc::run_command({facts.path, "-c", kQuery, probe_dir}, limit, env);
  if (!ran) {
    facts.problem = "could not start: " + ran.error().message;
    return facts;
  }
  if (ran->timed_out) {
    facts.problem = fmt::format("did not answer within {} s and was stopped",
                                std::chrono::duration_cast<std::chrono::seconds>(limit).count());
    return facts;
  }
  read_answer(ran->out, facts);
  if (!ran->status.success()) {
    // What it printed before failing is kept; the failure is what the report leads with.
    const std::string why = last_line_of(ran->err.empty() ? ran->out : ran->err);
    facts.problem =
        fmt::format("it ended with {}{}", ran->status.describe(), why.empty() ? "" : ": " + why);
  }
  return facts;
}

ProgramFacts look_up(const std::string& name) {
  ProgramFacts facts;
  facts.name = name;
  auto found = proc::find_program(name);
  if (found)
    facts.path = *found;
  else
    facts.problem = found.error().message;
  return facts;
}

std::vector<std::pair<std::string, std::string>> variables(
    const std::vector<std::string>& names, const std::vector<std::string>& prefixes) {
  std::map<std::string, std::string> found;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    const bool wanted = std::find(names.begin(), names.end(), name) != names.end() ||
                        std::any_of(prefixes.begin(), prefixes.end(),
                                    [&](const std::string& p) { return name.rfind(p, 0) == 0; });
    if (wanted) found[name] = entry.substr(eq + 1);
  }
  return {found.begin(), found.end()};
}

PortFacts port_facts(int port, std::string origin) {
  const proc::PortProbe probe = proc::probe_port(port);
  PortFacts facts;
  facts.port = port;
  facts.origin = std::move(origin);
  facts.free = probe.free;
  facts.bind_error = probe.bind_error;
  for (const proc::PortHolder& h : probe.holders) {
    facts.holders.push_back(h.command_line.empty()
                                ? fmt::format("pid {}", h.pid)
                                : fmt::format("pid {} ({})", h.pid, h.command_line));
  }
  return facts;
}

std::string limit_text(rlim_t value) {
  return value == RLIM_INFINITY ? std::string("unlimited") : std::to_string(value);
}

}  // namespace

std::string shebang_interpreter(const fs::path& script) {
  std::ifstream in(script, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("#!", 0) != 0) return {};
  std::vector<std::string> words;
  std::size_t i = 2;
  while (i < line.size()) {
    const std::size_t start = line.find_first_not_of(" \t\r", i);
    if (start == std::string::npos) break;
    const std::size_t end = line.find_first_of(" \t\r", start);
    words.push_back(line.substr(start, end == std::string::npos ? end : end - start));
    i = end == std::string::npos ? line.size() : end;
  }
  if (words.empty()) return {};
  if (fs::path(words[0]).filename() == "env") {
    for (std::size_t w = 1; w < words.size(); ++w) {
      if (words[w].front() != '-') return words[w];
    }
    return {};
  }
  return words[0];
}

std::vector<std::pair<std::string, std::string>> interpreters_for(
    const config::TrainerSection& trainer, const std::string& path_var, std::string& choice) {
  if (trainer.kind == "command" && !trainer.command.empty()) {
    const std::string& program = trainer.command.front();
    if (is_python_name(program)) {
      choice = "the trainer command's program";
      return {{program, "the trainer command's program"}};
    }
    auto found = proc::find_program(program, path_var);
    if (!found) {
      // Not there: say so under its own name rather than guess another interpreter.
      choice = "the trainer command's program";
      return {{program, "the trainer command's program"}};
    }
    if (const std::string inner = shebang_interpreter(*found); is_python_name(inner)) {
      choice = fmt::format("the #! line of the trainer command's program {}", *found);
      return {{inner, "the #! line of " + *found}};
    }
    choice = fmt::format(
        "the trainer command's program {} is not a Python interpreter nor "
        "script; the defaults instead",
        program);
  } else {
    choice = "no trainer command names one ([trainer] kind = " + trainer.kind + "); the defaults";
  }
  std::vector<std::pair<std::string, std::string>> names;
  auto on_path = proc::find_program("python3", path_var);
  if (on_path && same_file(*on_path, kDefaultPython)) {
    names.emplace_back(kDefaultPython, "python3 on PATH, also the default /usr/bin/python3");
  } else {
    names.emplace_back("python3", "python3 on PATH");
    names.emplace_back(kDefaultPython, "the default /usr/bin/python3");
  }
  return names;
}

EnvironmentFacts gather_environment(const EnvironmentRequest& request) {
  EnvironmentFacts facts;
  facts.tool_version = request.tool_version;
  std::error_code ec;
  facts.tool_program = fs::read_symlink("/proc/self/exe", ec).string();
  auto probe = launch::probe_package_dir();
  if (probe)
    facts.probe_dir = probe->string();
  else
    facts.probe_problem = probe.error().message;

  facts.config_file = request.config_file;
  facts.config_sets = request.config_sets;
  static const config::Config kDefaults{};
  const config::Config& config = request.config ? *request.config : kDefaults;
  const config::TrainerSection& trainer = config.trainer;
  facts.trainer = trainer.kind == "command" ? "command: " + join_words(trainer.command)
                                            : trainer.kind + " (bigmac-train, not Python)";
  for (const char* key : {"trainer.command", "trainer.kind"}) {
    const config::Setting* s = config.settings.find(key);
    if (s && s->origin.kind != config::SourceKind::kDefault) {
      facts.trainer_origin = s->origin.describe();
      break;
    }
  }
  facts.launcher = config.launch.launcher;

  std::map<std::string, std::string> env;
  for (const auto& [name, setting] : config.trainer_env) {
    if (const auto* text = std::get_if<std::string>(&setting.value)) env[name] = *text;
  }
  const std::string path_var = env.count("PATH") ? env["PATH"] : env_value("PATH");
  for (const auto& [name, why] : interpreters_for(trainer, path_var, facts.interpreter_choice)) {
    facts.interpreters.push_back(
        ask_interpreter(name, why, facts.probe_dir, env, request.interpreter_limit));
  }

  facts.torchrun = look_up("torchrun");
  if (!facts.torchrun.path.empty()) {
    const std::string inner = shebang_interpreter(facts.torchrun.path);
    facts.torchrun.detail = inner.empty() ? "" : "runs " + inner + " (its #! line)";
  }
  // The gates' torchrun for a trainer run by a Python interpreter is that interpreter's own,
  // not the one on PATH (launch/launcher_commands.h).
  if (trainer.kind == "command" && !trainer.command.empty()) {
    const std::vector<std::string> agent =
        launch::torchrun_agent_program(trainer.command.front(), "torchrun");
    if (agent.size() > 1) {
      facts.torchrun.detail += std::string(facts.torchrun.detail.empty() ? "" : "; ") +
                               "the gates start " + join_words(agent) +
                               " instead (the trainer's interpreter, so agent and workers share "
                               "its torch)";
    }
  }
  facts.srun = look_up("srun");
  if (!facts.srun.path.empty()) {
    auto version = proc::run_command({facts.srun.path, "--version"}, std::chrono::seconds(10));
    if (version && version->ok())
      facts.srun.detail = first_line_of(version->out) + " (srun --version)";
    else
      facts.srun.problem =
          "srun --version failed: " +
          (version ? (version->timed_out ? std::string("timed out") : version->first_line())
                   : version.error().message);
  }

  facts.slurm = variables({}, {"SLURM_"});
  facts.distributed_env =
      variables({"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                 "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "GLOO_SOCKET_IFNAME",
                 "TORCH_DISTRIBUTED_DEBUG", "OMP_NUM_THREADS", "PYTHONPATH"},
                {"NCCL_"});

  facts.ports.push_back(port_facts(kDefaultMasterPort, "torchrun's default master port"));
  if (config.launch.master_port > 0 && config.launch.master_port != kDefaultMasterPort)
    facts.ports.push_back(port_facts(config.launch.master_port, "[launch] master_port"));
  facts.os_free_port = proc::free_listen_port();

  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) facts.hostname = host;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) facts.cpus_usable = CPU_COUNT(&set);
  facts.cpus_online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    facts.open_files_soft = limit_text(files.rlim_cur);
    facts.open_files_hard = limit_text(files.rlim_max);
  }
  return facts;
}

}  // namespace bigmac::adopt
