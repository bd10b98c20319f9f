// Printing the facts of `bigmac-bringup env` (environment.h): text and JSON, nothing else.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "adopt/environment.h"
#include "core/json_file.h"

namespace bigmac::adopt {
namespace {

using Json = nlohmann::ordered_json;

struct Section {
  std::string title;
  std::vector<std::pair<std::string, std::string>> rows;
  void add(std::string key, std::string value) {
    rows.emplace_back(std::move(key), std::move(value));
  }
};

std::string yes_no(bool value) { return value ? "yes" : "no"; }

std::string render(const std::vector<Section>& sections) {
  std::string text = "bigmac-bringup env (in parentheses: where a value came from)\n";
  for (const Section& s : sections) {
    std::size_t width = 0;
    for (const auto& row : s.rows) width = std::max(width, row.first.size() + 1);
    text += "\n" + s.title + "\n";
    for (const auto& [key, value] : s.rows) {
      text += fmt::format("  {:<{}} {}\n", key + ":", width, value);
    }
  }
  return text;
}

// The interpreters asked that import torch, for the summary line.
std::string torch_summary(const EnvironmentFacts& facts) {
  std::vector<std::string> with;
  std::vector<std::string> without;
  for (const InterpreterFacts& i : facts.interpreters) {
    const std::string name = i.path.empty() ? i.name : i.path;
    (i.torch.importable ? with : without).push_back(name);
  }
  if (with.empty()) return "none of the interpreters asked imports torch";
  std::string text = "torch imports under " + fmt::format("{}", fmt::join(with, ", "));
  if (!without.empty()) text += fmt::format("; not under {}", fmt::join(without, ", "));
  return text;
}

Section interpreter_section(const InterpreterFacts& i) {
  Section s{fmt::format("interpreter {} ({})", i.name, i.origin), {}};
  if (!i.path.empty() && i.path != i.name) s.add("path", i.path + " (PATH)");
  s.add("status", i.answered() ? "answered (asked once: python -c ...)" : i.problem);
  if (i.python_version.empty()) return s;
  s.add("python", i.python_version + " (sys.version)");
  s.add("executable", i.executable + " (sys.executable)");
  const TorchFacts& t = i.torch;
  if (!t.importable) {
    s.add("torch", "not importable: " + (t.error.empty() ? std::string("no answer") : t.error) +
                       " (import torch)");
  } else {
    s.add("torch", t.version + " at " + t.location + " (torch.__version__)");
    s.add("cuda build", t.cuda_version.empty()
                            ? "none: torch built without CUDA (torch.version.cuda)"
                            : "CUDA " + t.cuda_version + " (torch.version.cuda)");
    s.add("cuda available", yes_no(t.cuda_available) + " (torch.cuda.is_available())");
    s.add("nccl version", t.nccl_version.empty()
                              ? "none: " + t.nccl_error + " (torch.cuda.nccl.version())"
                              : t.nccl_version + " (torch.cuda.nccl.version())");
    if (!t.distributed_available) {
      s.add("distributed",
            "no: torch.distributed is not available (torch.distributed.is_available())");
    } else {
      s.add("gloo available",
            yes_no(t.gloo_available) + " (torch.distributed.is_gloo_available())");
      s.add("nccl available",
            yes_no(t.nccl_available) + " (torch.distributed.is_nccl_available())");
    }
    s.add("devices", std::to_string(t.device_count) + " (torch.cuda.device_count())");
    for (std::size_t d = 0; d < t.devices.size(); ++d) {
      s.add(fmt::format("device {}", d), t.devices[d] + " (torch.cuda.get_device_name)");
    }
    if (!t.device_error.empty()) s.add("device error", t.device_error);
  }
  s.add("probe imports",
        i.probe_imports
            ? fmt::format("yes, bigmac_probe {} (import bigmac_probe from the probe package)",
                          i.probe_version)
            : "no: " + (i.probe_error.empty() ? std::string("no probe package") : i.probe_error));
  return s;
}

std::string program_line(const ProgramFacts& p) {
  if (p.path.empty()) {
    return "not found: " + p.problem + (p.detail.empty() ? "" : "; " + p.detail);
  }
  std::string text = p.path + " (PATH)";
  if (!p.detail.empty()) text += "; " + p.detail;
  if (!p.problem.empty()) text += "; " + p.problem;
  return text;
}

std::string port_line(const PortFacts& p) {
  if (p.free) return "free (a bind on 0.0.0.0 succeeded; " + p.origin + ")";
  std::string text = "taken: " + p.bind_error;
  if (!p.holders.empty()) text += fmt::format(", held by {}", fmt::join(p.holders, ", "));
  return text + " (a bind on 0.0.0.0; " + p.origin + ")";
}

Json interpreter_json(const InterpreterFacts& i) {
  Json j;
  j["name"] = i.name;
  j["origin"] = i.origin;
  j["path"] = i.path;
  j["found"] = !i.path.empty();
  j["answered"] = i.answered();
  j["problem"] = i.problem;
  j["python_version"] = i.python_version;
  j["executable"] = i.executable;
  const TorchFacts& t = i.torch;
  Json torch;
  torch["importable"] = t.importable;
  torch["error"] = t.error;
  torch["version"] = t.version;
  torch["location"] = t.location;
  torch["cuda_version"] = t.cuda_version;
  torch["cuda_available"] = t.cuda_available;
  torch["nccl_version"] = t.nccl_version;
  torch["nccl_error"] = t.nccl_error;
  torch["distributed_available"] = t.distributed_available;
  torch["gloo_available"] = t.gloo_available;
  torch["nccl_available"] = t.nccl_available;
  torch["device_count"] = t.device_count;
  torch["devices"] = t.devices;
  torch["device_error"] = t.device_error;
  j["torch"] = torch;
  j["probe"] = {
      {"imports", i.probe_imports}, {"version", i.probe_version}, {"error", i.probe_error}};
  return j;
}

Json program_json(const ProgramFacts& p) {
  return {
      {"found", !p.path.empty()}, {"path", p.path}, {"detail", p.detail}, {"problem", p.problem}};
}

Json pairs_json(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Json j = Json::object();
  for (const auto& [k, v] : pairs) j[k] = v;
  return j;
}

}  // namespace

std::string environment_text(const EnvironmentFacts& f) {
  std::vector<Section> sections;

  Section tool{"tool", {}};
  tool.add("version", f.tool_version);
  tool.add("program", f.tool_program + " (/proc/self/exe)");
  tool.add("probe package", f.probe_dir.empty()
                                ? "missing: " + f.probe_problem
                                : f.probe_dir + " (beside the program, else the source tree)");
  sections.push_back(std::move(tool));

  Section config{"configuration", {}};
  config.add("file", f.config_file.empty() ? "none: the built-in defaults (no -c)" : f.config_file);
  if (!f.config_sets.empty())
    config.add("--set", fmt::format("{}", fmt::join(f.config_sets, "; ")));
  config.add("trainer",
             f.trainer + " (" +
                 (f.trainer_origin.empty() ? "[trainer], built-in default" : f.trainer_origin) +
                 ")");
  config.add("launcher", f.launcher + " ([launch] launcher)");
  config.add("interpreters", f.interpreter_choice);
  config.add("torch", torch_summary(f));
  sections.push_back(std::move(config));

  for (const InterpreterFacts& i : f.interpreters) sections.push_back(interpreter_section(i));

  Section launchers{"launchers", {}};
  launchers.add("torchrun", program_line(f.torchrun));
  launchers.add("srun", program_line(f.srun));
  sections.push_back(std::move(launchers));

  Section slurm{"slurm allocation (SLURM_* variables of this shell)", {}};
  const bool inside = std::any_of(f.slurm.begin(), f.slurm.end(),
                                  [](const auto& kv) { return kv.first == "SLURM_JOB_ID"; });
  if (!inside) slurm.add("allocation", "none: SLURM_JOB_ID is not set");
  for (const auto& [k, v] : f.slurm) slurm.add(k, v);
  sections.push_back(std::move(slurm));

  Section dist{"distributed variables (this shell's, which the ranks inherit)", {}};
  if (f.distributed_env.empty()) dist.add("set", "none of MASTER_*, RANK, WORLD_SIZE, NCCL_*, ...");
  for (const auto& [k, v] : f.distributed_env) dist.add(k, v);
  sections.push_back(std::move(dist));

  Section net{"network", {}};
  for (const PortFacts& p : f.ports) net.add(fmt::format("port {}", p.port), port_line(p));
  net.add("free port", f.os_free_port > 0 ? std::to_string(f.os_free_port) +
                                                " (the OS's pick for a bind to port 0)"
                                          : "none: no socket could be bound");
  sections.push_back(std::move(net));

  Section host{"host", {}};
  host.add("hostname", f.hostname + " (gethostname)");
  host.add("cpus", fmt::format("{} usable of {} online (sched_getaffinity, sysconf)", f.cpus_usable,
                               f.cpus_online));
  host.add("open files", fmt::format("soft {}, hard {} (RLIMIT_NOFILE: ulimit -Sn, -Hn)",
                                     f.open_files_soft, f.open_files_hard));
  sections.push_back(std::move(host));

  return render(sections);
}

std::string environment_json(const EnvironmentFacts& f) {
  Json j;
  j["tool"] = {{"version", f.tool_version},
               {"program", f.tool_program},
               {"probe_dir", f.probe_dir},
               {"probe_problem", f.probe_problem}};
  j["configuration"] = {{"file", f.config_file},  {"sets", f.config_sets},
                        {"trainer", f.trainer},   {"trainer_origin", f.trainer_origin},
                        {"launcher", f.launcher}, {"interpreter_choice", f.interpreter_choice}};
  Json interpreters = Json::array();
  for (const InterpreterFacts& i : f.interpreters) interpreters.push_back(interpreter_json(i));
  j["interpreters"] = interpreters;
  j["launchers"] = {{"torchrun", program_json(f.torchrun)}, {"srun", program_json(f.srun)}};
  const bool inside = std::any_of(f.slurm.begin(), f.slurm.end(),
                                  [](const auto& kv) { return kv.first == "SLURM_JOB_ID"; });
  j["slurm"] = {{"inside_allocation", inside}, {"variables", pairs_json(f.slurm)}};
  j["distributed_env"] = pairs_json(f.distributed_env);
  Json ports = Json::array();
  for (const PortFacts& p : f.ports) {
    ports.push_back({{"port", p.port},
                     {"origin", p.origin},
                     {"free", p.free},
                     {"bind_error", p.bind_error},
                     {"holders", p.holders}});
  }
  j["network"] = {{"ports", ports}, {"os_free_port", f.os_free_port}};
  j["host"] = {{"hostname", f.hostname},
               {"cpus_usable", f.cpus_usable},
               {"cpus_online", f.cpus_online},
               {"open_files_soft", f.open_files_soft},
               {"open_files_hard", f.open_files_hard}};
  return json_text(j, 2) + "\n";
}

}  // namespace bigmac::adopt
