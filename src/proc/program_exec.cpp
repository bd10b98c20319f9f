#include "proc/program_exec.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "proc/program_path.h"

namespace bigmac::proc {

Error exec_program(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env) {
  if (argv.empty()) return make_error(ErrorKind::kUsage, "no program to run");
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  auto program = find_program(argv.front());
  if (!program) return program.error();
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  ::execv(program->c_str(), argp.data());
  return make_error(ErrorKind::kInfrastructure,
                    fmt::format("cannot execute '{}': {}", *program, std::strerror(errno)));
}

Expected<void> redirect_output(const std::filesystem::path& stdout_path,
                               const std::filesystem::path& stderr_path) {
  const std::pair<const std::filesystem::path*, int> targets[] = {{&stdout_path, STDOUT_FILENO},
                                                                  {&stderr_path, STDERR_FILENO}};
  for (const auto& [path, target] : targets) {
    const int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      return tl::unexpected(
          make_error(ErrorKind::kInfrastructure,
                     fmt::format("cannot open {} for the rank's output: {}", path->string(),
                                 std::strerror(errno)),
                     "the run directory must be writable from every node (shared storage)"));
    }
    const int rc = ::dup2(fd, target);  // the duplicate does not inherit O_CLOEXEC
    const int saved = errno;
    ::close(fd);
    if (rc < 0) {
      return tl::unexpected(
          make_error(ErrorKind::kInfrastructure,
                     fmt::format("dup2 onto fd {}: {}", target, std::strerror(saved))));
    }
  }
  return {};
}

}  // namespace bigmac::proc
