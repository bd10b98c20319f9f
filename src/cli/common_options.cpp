#include "cli/common_options.h"

#include <cstdlib>
#include <ostream>
#include <string_view>

namespace bigmac::cli {

CLI::Validator named_value(std::string what) {
  return CLI::Validator(
      [what](std::string& value) -> std::string {
        if (value.empty()) return "expected " + what + ", found an empty value";
        if (value == "--") return "expected " + what + ", found '--' (a value is missing)";
        return {};
      },
      "", "named_value");
}

void add_config_options(CLI::App& command, CommonOptions& options) {
  command
      .add_option("-c,--config", options.config_file,
                  "TOML configuration file (default: none, the built-in defaults, which "
                  "configs/demo.toml writes out)")
      ->check(named_value("a configuration file"));
  command
      .add_option("--set", options.sets,
                  "override one value: table.key=value (repeatable; beats file and env)")
      ->take_all()
      ->allow_extra_args(false);
}

tl::expected<config::Config, Errors> load_config(const CommonOptions& options) {
  config::ConfigSources sources;
  if (!options.config_file.empty()) sources.file = options.config_file;
  sources.overrides = options.sets;
  sources.env = config::read_env();
  return config::load_config(sources);
}

tl::expected<logs::ParserOptions, Errors> log_parser_options(const CommonOptions& options) {
  if (options.config_file.empty() && options.sets.empty()) return logs::ParserOptions{};
  auto config = load_config(options);
  if (!config) return tl::unexpected(config.error());
  auto parser = logs::parser_options(*config);
  if (!parser) return tl::unexpected(Errors{parser.error()});
  return std::move(*parser);
}

namespace {
std::string& invoked_as() {
  static std::string argv0 = "bigmac-bringup";
  return argv0;
}
}  // namespace

void set_invoked_as(const char* argv0) {
  if (argv0 == nullptr || *argv0 == '\0') return;
  const std::string_view name(argv0);
  std::error_code ec;
  // A path is made absolute now: a run may enter the directory it started in later.
  const auto absolute = std::filesystem::absolute(name, ec);
  invoked_as() = name.find('/') == std::string_view::npos || ec
                     ? std::string(name)
                     : absolute.lexically_normal().string();
}

std::string invoked_program(const std::filesystem::path& cwd) {
  const std::string& argv0 = invoked_as();
  if (argv0.find('/') == std::string::npos) return argv0;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::canonical(argv0, ec);
  // On PATH under its own name: the short form works anywhere.
  if (const char* path = std::getenv("PATH"); path != nullptr && !ec) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty()) continue;
      std::error_code e;
      if (fs::canonical(fs::path(dir) / "bigmac-bringup", e) == self && !e) return "bigmac-bringup";
    }
  }
  return shorter_path(argv0, cwd);
}

std::string shorter_path(const std::filesystem::path& path, const std::filesystem::path& base) {
  const std::filesystem::path absolute = path.lexically_normal();
  if (!absolute.is_absolute() || !base.is_absolute()) return path.string();
  const std::filesystem::path relative = absolute.lexically_relative(base.lexically_normal());
  if (relative.empty()) return absolute.string();
  const std::string text = relative.string();
  return text.size() < absolute.string().size() ? text : absolute.string();
}

void print_errors(std::ostream& err, const Errors& errors) {
  for (const Error& e : errors) err << "bigmac-bringup: error: " << e.format() << "\n";
}

}  // namespace bigmac::cli
