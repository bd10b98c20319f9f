#include "config/settings.h"

#include <fmt/format.h>

namespace bigmac::config {

std::string Origin::describe() const {
  switch (kind) {
    case SourceKind::kDefault:
      return "default";
    case SourceKind::kFile:
      if (line > 0) return fmt::format("{}:{}:{}", where, line, column);
      return where;
    case SourceKind::kEnv:
      return "env " + where;
    case SourceKind::kCommandLine:
      return "--set " + where;
    case SourceKind::kDerived:
      return "derived: " + where;
  }
  return where;
}

void locate(Error& error, const Origin& origin) {
  if (origin.kind == SourceKind::kFile) {
    error.file = origin.where;
    error.line = origin.line;
    error.column = origin.column;
  } else if (origin.kind != SourceKind::kDefault) {
    error.file = origin.describe();
  }
}

std::string value_to_string(const Value& value) {
  struct Printer {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        out += fmt::format("{}\"{}\"", i ? ", " : "", v[i]);
      }
      return out + "]";
    }
  };
  return std::visit(Printer{}, value);
}

const Setting* SettingTable::find(std::string_view key) const {
  for (const Setting& s : entries) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace bigmac::config
