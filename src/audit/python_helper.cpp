#include "audit/python_helper.h"

#include <chrono>
#include <optional>

#include "proc/program_path.h"

namespace bigmac::audit {
namespace fs = std::filesystem;

namespace {

constexpr const char* kScriptName = "audit_python.py";

}  // namespace

Expected<PythonHelper> PythonHelper::locate(const fs::path& program_dir,
                                            const std::string& python) {
  PythonHelper helper;
  std::error_code ec;
  for (const fs::path& candidate : {program_dir / ".." / "share" / "bigmac-bringup" / kScriptName,
                                    fs::path(BIGMAC_AUDIT_HELPER)}) {
    if (fs::is_regular_file(candidate, ec)) {
      helper.script = candidate.lexically_normal();
      break;
    }
  }
  if (helper.script.empty()) {
    return tl::unexpected(make_error(
        ErrorKind::kInfrastructure,
        std::string("the Python reader ") + kScriptName + " is missing (looked in " +
            (program_dir / ".." / "share" / "bigmac-bringup").lexically_normal().string() +
            " and " + BIGMAC_AUDIT_HELPER + ")",
        "reinstall bigmac-bringup or rebuild it (the build copies the script beside the program)"));
  }
  auto interpreter = proc::find_program(python.empty() ? "python3" : python);
  if (!interpreter) {
    Error e = make_error(
        ErrorKind::kInput,
        "cannot read Python sources without a Python interpreter: " + interpreter.error().message,
        "install python3 or give one with --python PATH");
    return tl::unexpected(e);
  }
  helper.interpreter = *interpreter;
  return helper;
}

Expected<std::string> PythonHelper::run(proc::ProcessRunner& runner,
                                        const std::vector<std::string>& files) const {
  proc::RankSpec spec;
  spec.argv = {interpreter, "-I", script.string()};
  spec.argv.insert(spec.argv.end(), files.begin(), files.end());
  if (auto pid = runner.spawn(spec); !pid) return tl::unexpected(pid.error());
  std::string out;
  std::string err;
  const proc::OutputSink sink = [&](int, proc::Stream stream, std::string_view bytes) {
    (stream == proc::Stream::kStdout ? out : err).append(bytes);
  };
  // Reading a large project takes seconds; a helper still busy after this long is stuck.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  std::optional<proc::ExitStatus> status;
  while (!status) {
    for (const proc::RankExit& exit : runner.poll(std::chrono::milliseconds(200), sink).exited) {
      status = exit.status;
    }
    if (!status && std::chrono::steady_clock::now() > deadline) {
      runner.terminate(std::chrono::seconds(2), sink);
      return tl::unexpected(make_error(ErrorKind::kInfrastructure,
                                       script.string() + " did not finish within 5 minutes"));
    }
  }
  if (!status->success()) {
    std::string tail = err.size() > 2000 ? err.substr(err.size() - 2000) : err;
    return tl::unexpected(make_error(
        ErrorKind::kInfrastructure,
        interpreter + " " + script.string() + " failed (" + status->describe() + "): " + tail,
        "the audit needs Python 3.9 or newer for its ast module; give another with --python"));
  }
  return out;
}

}  // namespace bigmac::audit
