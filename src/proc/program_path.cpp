#include "proc/program_path.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace bigmac::proc {
namespace {

bool executable_file(const std::string& path) {
  std::error_code ec;
  return ::access(path.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(path, ec);
}

}  // namespace

Expected<std::string> find_program(const std::string& name, const std::string& path_var) {
  if (name.empty()) {
    return tl::unexpected(make_error(ErrorKind::kInfrastructure, "empty program name"));
  }
  if (name.find('/') != std::string::npos) {
    if (executable_file(name)) return name;
    std::error_code ec;
    const bool exists = std::filesystem::exists(name, ec);
    return tl::unexpected(make_error(
        ErrorKind::kInfrastructure,
        fmt::format("cannot execute '{}': {}", name,
                    exists ? "not an executable file" : "no such file"),
        exists ? "chmod +x it, or point to the built binary" : "build it or fix the path"));
  }
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    std::string dir = path_var.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return tl::unexpected(make_error(ErrorKind::kInfrastructure,
                                   fmt::format("'{}' not found in PATH ({})", name, path_var),
                                   "install it or give its full path"));
}

Expected<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  return find_program(name, path ? path : "");
}

}  // namespace bigmac::proc
