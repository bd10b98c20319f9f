#include "config/toml_source.h"

#include <sstream>

namespace bigmac::config {

Expected<toml::table> parse_toml_text(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    // toml++ is built with exceptions; they stop at this boundary.
    Error e = make_error(ErrorKind::kConfig, std::string(err.description()),
                         "fix the TOML syntax at this position");
    e.file = path;
    e.line = static_cast<int>(err.source().begin.line);
    e.column = static_cast<int>(err.source().begin.column);
    return tl::unexpected(std::move(e));
  }
}

std::string toml_value_text(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

}  // namespace bigmac::config
