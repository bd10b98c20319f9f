#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace bigmac::adopt {

/// What `import torch` under one interpreter answered (torch.__version__, torch.cuda,
/// torch.distributed).
struct TorchFacts {
  bool importable = false;
  std::string error;         ///< why `import torch` failed ("ModuleNotFoundError: ...")
  std::string version;       ///< torch.__version__
  std::string location;      ///< the folder of torch/__init__.py
  std::string cuda_version;  ///< torch.version.cuda; empty: built without CUDA
  bool cuda_available = false;
  std::string nccl_version;  ///< torch.cuda.nccl.version(); empty with nccl_error
  std::string nccl_error;
  bool distributed_available = false;  ///< torch.distributed.is_available()
  bool gloo_available = false;
  bool nccl_available = false;
  int device_count = 0;  ///< torch.cuda.device_count()
  std::vector<std::string> devices;
  std::string device_error;  ///< a torch.cuda call that raised
};

/// One Python interpreter asked once what it has.
struct InterpreterFacts {
  std::string name;     ///< as named: "python3", "/usr/bin/python3"
  std::string origin;   ///< why this one: "the trainer command's program", "python3 on PATH"
  std::string path;     ///< where it was found; empty when not found
  std::string problem;  ///< not found, did not start, failed, timed out; empty when it answered
  std::string python_version;  ///< sys.version's first word
  std::string executable;      ///< sys.executable
  bool probe_imports = false;  ///< bigmac_probe and its modules import from the probe folder
  std::string probe_version;   ///< bigmac_probe.__version__
  std::string probe_error;
  TorchFacts torch;

  bool answered() const { return problem.empty(); }
};

/// A program looked up in PATH.
struct ProgramFacts {
  std::string name;
  std::string path;     ///< empty when not found
  std::string problem;  ///< why not found, or why its version could not be read
  std::string detail;   ///< srun: `srun --version`; torchrun: the interpreter of its #! line
};

/// Whether a TCP port could be bound.
struct PortFacts {
  int port = 0;
  std::string origin;  ///< "torchrun's default", "[launch] master_port"
  bool free = true;
  std::string bind_error;
  std::vector<std::string> holders;  ///< "pid 123 (python3 train.py)"
};

/// Everything `bigmac-bringup env` reports. Filled by gather_environment, printed by
/// environment_text / environment_json, which do nothing else (a test fills one by hand).
struct EnvironmentFacts {
  std::string tool_version;
  std::string tool_program;  ///< /proc/self/exe
  std::string probe_dir;     ///< empty with probe_problem
  std::string probe_problem;

  std::string config_file;  ///< empty: the built-in defaults
  std::vector<std::string> config_sets;
  std::string trainer;             ///< "builtin (bigmac-train)" or the command
  std::string trainer_origin;      ///< where [trainer] kind/command was set
  std::string launcher;            ///< [launch] launcher
  std::string interpreter_choice;  ///< why these interpreters were asked
  std::vector<InterpreterFacts> interpreters;

  ProgramFacts torchrun;
  ProgramFacts srun;
  std::vector<std::pair<std::string, std::string>> slurm;            ///< SLURM_* set, by name
  std::vector<std::pair<std::string, std::string>> distributed_env;  ///< MASTER_ADDR, NCCL_*...

  std::vector<PortFacts> ports;
  int os_free_port = 0;  ///< 0: no socket could be bound

  std::string hostname;
  int cpus_usable = 0;          ///< sched_getaffinity
  int cpus_online = 0;          ///< sysconf(_SC_NPROCESSORS_ONLN)
  std::string open_files_soft;  ///< RLIMIT_NOFILE; "unlimited" for RLIM_INFINITY
  std::string open_files_hard;
};

/// What to look at: the loaded configuration and how it was named.
struct EnvironmentRequest {
  std::string tool_version;
  const config::Config* config = nullptr;
  std::string config_file;  ///< -c; empty = built-in defaults
  std::vector<std::string> config_sets;
  std::chrono::milliseconds interpreter_limit{60'000};  ///< per interpreter
};

/// The interpreters to ask for a trainer: its command's program when that is Python (python*,
/// a script or torchrun whose #! line names one, found in `path_var`), else python3 on PATH
/// and /usr/bin/python3. Each pair is (name, why).
std::vector<std::pair<std::string, std::string>> interpreters_for(
    const config::TrainerSection& trainer, const std::string& path_var, std::string& choice);

/// The interpreter of a script's `#!` line ("/usr/bin/python3", or "python3" for
/// `#!/usr/bin/env python3`); empty when the file has none.
std::string shebang_interpreter(const std::filesystem::path& script);

/// Looks: runs each interpreter once (argv, its own process group, a time limit), PATH, the
/// environment, the ports, the limits. Never fails: what could not be found is a fact.
EnvironmentFacts gather_environment(const EnvironmentRequest& request);

/// Aligned `key: value (source)` sections.
std::string environment_text(const EnvironmentFacts& facts);

/// The same facts as one JSON object (docs/env.md).
std::string environment_json(const EnvironmentFacts& facts);

}  // namespace bigmac::adopt
