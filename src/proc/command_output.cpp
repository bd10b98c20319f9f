#include "proc/command_output.h"

#include <algorithm>

#include "proc/posix_process_runner.h"

namespace bigmac::proc {
namespace {

constexpr std::size_t kMaxCaptured = std::size_t{1} << 20;

std::string first_non_empty_line(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) return line;
    start = end + 1;
  }
  return {};
}

}  // namespace

std::string CommandOutput::first_line() const {
  std::string line = first_non_empty_line(err);
  return line.empty() ? first_non_empty_line(out) : line;
}

Expected<CommandOutput> run_command(const std::vector<std::string>& argv,
                                    std::chrono::milliseconds limit,
                                    const std::map<std::string, std::string>& env) {
  PosixProcessRunner runner;
  RankSpec spec;
  spec.argv = argv;
  spec.env = env;
  CommandOutput result;
  const OutputSink sink = [&](int, Stream stream, std::string_view bytes) {
    std::string& into = stream == Stream::kStdout ? result.out : result.err;
    if (into.size() < kMaxCaptured) into.append(bytes.substr(0, kMaxCaptured - into.size()));
  };
  auto pid = runner.spawn(spec);
  if (!pid) return tl::unexpected(pid.error());
  bool exited = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!exited && std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    for (const RankExit& e :
         runner
             .poll(std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(200)),
                   sink)
             .exited) {
      result.status = e.status;
      exited = true;
    }
  }
  for (const RankExit& e : runner.terminate(std::chrono::milliseconds(1000), sink)) {
    if (!exited) result.status = e.status;
  }
  result.timed_out = !exited;
  return result;
}

}  // namespace bigmac::proc
