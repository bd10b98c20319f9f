#include "launch/preflight.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <map>
#include <set>

#include "launch/process_record.h"
#include "launch/slurm_preflight.h"
#include "proc/port_probe.h"
#include "proc/program_path.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;

Error problem(ErrorKind kind, std::string key, std::string message, std::string hint = {}) {
  Error e = make_error(kind, std::move(message), std::move(hint));
  e.key = std::move(key);
  return e;
}

class Checks {
 public:
  explicit Checks(PreflightReport& report) : report_(report) {}
  /// Records `name` as passed when `errors` stays unchanged while `check` runs.
  template <class F>
  void run(const char* name, F&& check) {
    const std::size_t before = report_.problems.size();
    check(report_.problems);
    if (report_.problems.size() == before) report_.passed.emplace_back(name);
  }

 private:
  PreflightReport& report_;
};

void check_port(const LaunchPlan& plan, Errors& out) {
  proc::PortProbe probe = proc::probe_port(plan.master_port);
  if (probe.free) return;
  std::string who;
  for (const proc::PortHolder& h : probe.holders) {
    who += fmt::format("{}pid {} ({})", who.empty() ? "" : ", ", h.pid, h.command_line);
  }
  out.push_back(
      problem(ErrorKind::kInfrastructure, "launch.master_port",
              fmt::format("master port {} is in use ({}), held by {}", plan.master_port,
                          probe.bind_error, who.empty() ? "a process this user cannot see" : who),
              who.empty() ? "pick another launch.master_port"
                          : "stop that process or pick another launch.master_port"));
}

void check_address(const LaunchPlan& plan, Errors& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(plan.master_addr.c_str(), nullptr, &hints, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  if (rc == 0) return;
  out.push_back(problem(
      ErrorKind::kInfrastructure, "launch.master_addr",
      fmt::format("master address '{}' does not resolve: {}", plan.master_addr, ::gai_strerror(rc)),
      "use an IP address or a host name this machine can resolve"));
}

void check_devices(const LaunchPlan& plan, const DeviceInventory& inventory, Errors& out) {
  const int visible = static_cast<int>(inventory.cuda_devices.size());
  if (plan.nproc_per_node > visible) {
    out.push_back(problem(
        ErrorKind::kConfig, "launch.nproc_per_node",
        fmt::format("{} processes per node need {} GPUs, but {} visible (from {})",
                    plan.nproc_per_node, plan.nproc_per_node, visible, inventory.source),
        fmt::format("set launch.nproc_per_node <= {} or launch.devices = \"cpu\"", visible)));
  }
  std::map<std::pair<int, std::string>, int> owner;
  for (const RankAssignment& r : plan.ranks) {
    auto [it, inserted] = owner.emplace(std::make_pair(r.node_rank, r.device), r.rank);
    if (!inserted) {
      out.push_back(problem(ErrorKind::kConfig, "launch.devices",
                            fmt::format("ranks {} and {} on node {} share device {}", it->second,
                                        r.rank, r.node_rank, r.device)));
    }
  }
}

void check_consistency(const LaunchPlan& plan, Errors& out) {
  const std::map<std::string, std::string> expected = {
      {"MASTER_ADDR", plan.master_addr},
      {"MASTER_PORT", std::to_string(plan.master_port)},
      {"WORLD_SIZE", std::to_string(plan.world_size)}};
  if (static_cast<int>(plan.ranks.size()) != plan.world_size) {
    out.push_back(problem(ErrorKind::kConfig, "launch.nproc_per_node",
                          fmt::format("the plan has {} ranks but WORLD_SIZE is {}",
                                      plan.ranks.size(), plan.world_size)));
  }
  std::set<std::string> seen_ranks;
  for (const RankAssignment& r : plan.ranks) {
    for (const auto& [name, value] : expected) {
      auto it = r.env.find(name);
      const std::string got = it == r.env.end() ? "<unset>" : it->second;
      if (got != value) {
        out.push_back(problem(
            ErrorKind::kConfig, "launch",
            fmt::format("rank {} has {}={} but the plan has {}", r.rank, name, got, value)));
      }
    }
    auto rank = r.env.find("RANK");
    if (rank != r.env.end() && !seen_ranks.insert(rank->second).second) {
      out.push_back(problem(ErrorKind::kConfig, "launch",
                            fmt::format("RANK={} is given to two ranks", rank->second)));
    }
  }
}

void check_leftovers(const fs::path& run_dir, Errors& out) {
  const fs::path file = run_dir / kProcessRecordName;
  auto record = read_process_record(file);
  if (!record) {
    out.push_back(record.error());
    return;
  }
  if (!*record) return;
  for (const proc::ProcessInfo& p : leftover_processes(**record)) {
    Error e = problem(ErrorKind::kInfrastructure, "",
                      fmt::format("pid {} ({}) of an earlier run of this run directory is still "
                                  "running in process group {}",
                                  p.pid, p.command_line, (*record)->pgid),
                      fmt::format("stop it: kill -TERM -- -{}", (*record)->pgid));
    e.file = file.string();
    out.push_back(std::move(e));
  }
}

void check_disk(const fs::path& where, std::uintmax_t need, Errors& out) {
  fs::path probe = where;
  std::error_code ec;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  if (probe.empty()) probe = fs::current_path(ec);
  fs::space_info space = fs::space(probe, ec);
  if (ec) return;  // unknown filesystem: nothing to say with numbers
  if (space.available >= need) return;
  out.push_back(problem(ErrorKind::kInfrastructure, "",
                        fmt::format("only {} MiB free on {} for logs, need at least {} MiB",
                                    space.available >> 20, probe.string(), need >> 20),
                        "free space or choose another --run-dir"));
}

std::optional<std::uint64_t> limit_value(rlim_t value) {
  if (value == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

std::string limit_text(const std::optional<std::uint64_t>& value) {
  return value ? std::to_string(*value) : "unlimited";
}

// 4,096 ranks ran out of descriptors 99 s into the gate ("pipe: Too many open files"); the
// limit is known before anything starts.
void check_descriptors(const LaunchPlan& plan, const std::optional<FileLimit>& given, Errors& out,
                       std::vector<std::string>& notes) {
  const std::uint64_t need = descriptors_needed(plan);
  FileLimit limit;
  rlimit own{};
  if (given) {
    limit = *given;
  } else if (::getrlimit(RLIMIT_NOFILE, &own) == 0) {
    limit = {limit_value(own.rlim_cur), limit_value(own.rlim_max)};
  } else {
    notes.push_back("open files: the limit could not be read");
    return;
  }
  if (!limit.soft || *limit.soft >= need) return;
  if (!limit.hard || *limit.hard >= need) {
    // The soft limit is a default the process may raise itself, up to the hard one.
    if (!given) {
      own.rlim_cur = static_cast<rlim_t>(need);
      if (::setrlimit(RLIMIT_NOFILE, &own) != 0) {
        out.push_back(problem(ErrorKind::kInfrastructure, "",
                              fmt::format("the gate needs about {} open files for its {} ranks, "
                                          "the limit is {} and could not be raised",
                                          need, plan.ranks.size(), *limit.soft),
                              fmt::format("raise it before the run: ulimit -n {}", need)));
        return;
      }
    }
    notes.push_back(fmt::format("open files: the limit raised from {} to {} for {} ranks",
                                *limit.soft, need, plan.ranks.size()));
    return;
  }
  out.push_back(problem(
      ErrorKind::kInfrastructure, "",
      fmt::format("the gate needs about {} open files for its {} ranks ({} processes), but this "
                  "process may open at most {} (ulimit -n {}, hard limit {})",
                  need, plan.ranks.size(), plan.processes.size(), limit_text(limit.hard),
                  limit_text(limit.soft), limit_text(limit.hard)),
      fmt::format("raise the hard limit to at least {} (as root: `ulimit -Hn {}`, or nofile in "
                  "/etc/security/limits.conf; under systemd LimitNOFILE=), or start fewer "
                  "processes per host (launch.launcher = \"torchrun\" starts one per node)",
                  need, need)));
}

void check_program(const std::string& program, const char* key, Errors& out) {
  auto found = proc::find_program(program);
  if (found) return;
  Error e = found.error();
  e.key = key;
  out.push_back(std::move(e));
}

}  // namespace

std::string PreflightReport::render() const {
  if (problems.empty()) return fmt::format("preflight: {} checks passed\n", passed.size());
  std::string out;
  for (const Error& e : problems) out += "preflight: " + e.format() + "\n";
  for (const std::string& note : notes) out += "preflight: note: " + note + "\n";
  return out;
}

std::uint64_t descriptors_needed(const LaunchPlan& plan) {
  constexpr std::uint64_t kBase = 32;  // its own: stdio, the lock, the state, the port claim
  const bool torchrun = elastic_agent(plan.launcher, plan.world_size) ||
                        plan.launcher == LauncherKind::kSlurmTorchrun;
  const std::uint64_t per_rank = torchrun ? 3 : 1;
  return kBase + 5 * plan.processes.size() + per_rank * plan.ranks.size();
}

PreflightReport run_preflight(const LaunchPlan& plan, const PreflightOptions& options) {
  PreflightReport report;
  Checks checks(report);
  checks.run("plan consistency", [&](Errors& out) { check_consistency(plan, out); });
  if (!uses_slurm(plan.launcher)) {
    checks.run("master address", [&](Errors& out) { check_address(plan, out); });
    if (options.check_port) checks.run("master port", [&](Errors& out) { check_port(plan, out); });
  } else {
    // With srun the master is the first node of the step, not necessarily this host.
    if (plan.slurm.explicit_master_addr) {
      checks.run("master address", [&](Errors& out) { check_address(plan, out); });
    }
    checks.run("slurm", [&](Errors& out) { check_slurm(plan, out, report.notes); });
  }
  if (plan.devices == "cuda") {
    DeviceInventory inventory = options.devices ? *options.devices : probe_devices();
    checks.run("devices", [&](Errors& out) { check_devices(plan, inventory, out); });
  }
  if (!options.run_dir.empty()) {
    checks.run("leftovers", [&](Errors& out) { check_leftovers(options.run_dir, out); });
  }
  const fs::path log_root = plan.log_dir.empty() ? options.run_dir : plan.log_dir;
  checks.run("disk", [&](Errors& out) { check_disk(log_root, options.min_free_bytes, out); });
  checks.run("open files",
             [&](Errors& out) { check_descriptors(plan, options.open_files, out, report.notes); });
  checks.run("trainer", [&](Errors& out) { check_program(plan.trainer_program, "trainer", out); });
  if (!plan.rank_env_program.empty()) {
    checks.run("rank wrapper",
               [&](Errors& out) { check_program(plan.rank_env_program, "launch.launcher", out); });
  }
  if (plan.launcher != LauncherKind::kBuiltin && !plan.processes.empty() &&
      !plan.processes.front().spec.argv.empty()) {
    checks.run("launcher", [&](Errors& out) {
      check_program(plan.processes.front().spec.argv.front(), "launch.launcher", out);
    });
  }
  return report;
}

}  // namespace bigmac::launch
