#include "config_fixture.h"

#include <unistd.h>

#include <fstream>

namespace bigmac::config {

void ConfigTest::SetUp() {
  dir_ = std::filesystem::temp_directory_path() /
         ("bigmac-config-" + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir_);
}

void ConfigTest::TearDown() { std::filesystem::remove_all(dir_); }

std::string ConfigTest::write(const std::string& toml, const std::string& name) {
  std::filesystem::path path = dir_ / name;
  std::ofstream(path) << toml;
  return path.string();
}

tl::expected<Config, Errors> ConfigTest::load(const std::string& toml,
                                              std::vector<std::string> overrides,
                                              std::map<std::string, std::string> env) {
  ConfigSources sources;
  sources.file = write(toml);
  sources.overrides = std::move(overrides);
  sources.env = std::move(env);
  return load_config(sources);
}

Config ConfigTest::load_ok(const std::string& toml, std::vector<std::string> overrides,
                           std::map<std::string, std::string> env) {
  auto config = load(toml, std::move(overrides), std::move(env));
  EXPECT_TRUE(config) << (config ? "" : join(config.error()));
  return config ? *config : Config{};
}

Errors ConfigTest::load_errors(const std::string& toml, std::vector<std::string> overrides,
                               std::map<std::string, std::string> env) {
  auto config = load(toml, std::move(overrides), std::move(env));
  EXPECT_FALSE(config) << "expected the configuration to be rejected";
  return config ? Errors{} : config.error();
}

std::string join(const Errors& errors) {
  std::string out;
  for (const Error& e : errors) out += e.format() + "\n";
  return out;
}

}  // namespace bigmac::config
