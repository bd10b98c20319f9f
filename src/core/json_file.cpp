#include "core/json_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/checked_integer.h"
#include "core/input_file.h"

namespace bigmac {
namespace {

// The word nlohmann stopped at, read backwards from the error position ("NaN", "-Infinity").
std::string_view word_at(std::string_view text, std::size_t at) {
  std::size_t begin = std::min(at, text.size());
  while (begin > 0 &&
         (std::isalpha(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '-')) {
    --begin;
  }
  std::size_t end = begin;
  while (end < text.size() &&
         (std::isalpha(static_cast<unsigned char>(text[end])) || text[end] == '-')) {
    ++end;
  }
  return text.substr(begin, end - begin);
}

// The line and column of byte `at` of `text`, 1-based.
void locate(Error& e, std::string_view text, std::size_t at) {
  const std::string_view before = text.substr(0, std::min(at, text.size()));
  e.line = static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1;
  const std::size_t line_start = before.rfind('\n');
  e.column = static_cast<int>(before.size() -
                              (line_start == std::string_view::npos ? 0 : line_start + 1)) +
             1;
}

// "number overflow parsing '1e999'": located at the token's first place in `text`.
Error out_of_range_error(std::string_view text, const std::filesystem::path& path,
                         std::string_view what) {
  std::string_view token;
  if (const auto open = what.find('\''); open != std::string_view::npos) {
    const auto close = what.find('\'', open + 1);
    if (close != std::string_view::npos) token = what.substr(open + 1, close - open - 1);
  }
  Error e = make_error(
      ErrorKind::kInput,
      fmt::format("the number {} is beyond the range of a double (about 1.8e308)",
                  token.empty() ? std::string("there") : std::string(token)),
      "a value this large is not a number a program can hold: was it written as Infinity? "
      "write a finite number");
  e.file = path.string();
  const std::size_t at = token.empty() ? std::string_view::npos : text.find(token);
  if (at != std::string_view::npos) locate(e, text, at);
  return e;
}

}  // namespace

Expected<nlohmann::json> parse_json(std::string_view text, const std::filesystem::path& path) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& err) {
    // nlohmann reports only by exception; it stops at this boundary like toml++'s.
    const std::size_t at = err.byte > 0 ? err.byte - 1 : 0;
    std::string what = err.what();
    if (auto colon = what.find(": ");
        what.rfind("[json.exception", 0) == 0 && colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
    std::string hint;
    const std::string_view word = word_at(text, at);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      what = "the file is empty";
      hint = "it holds no JSON at all: was it written completely?";
    } else if (what.find("; expected end of input") == std::string::npos &&
               (what.find("unexpected end of input") != std::string::npos ||
                text.find_first_not_of(" \t\r\n", at + 1) == std::string_view::npos)) {
      hint =
          "the file ends in the middle of the JSON: it is truncated (written partly, or the "
          "disk filled up?)";
    } else if (word.find("NaN") != std::string_view::npos ||
               word.find("Infinity") != std::string_view::npos ||
               word.find("nan") != std::string_view::npos ||
               word.find("inf") != std::string_view::npos) {
      hint = fmt::format("'{}' is not a JSON number: JSON holds finite numbers only", word);
    } else if (what.find("; expected end of input") != std::string::npos) {
      hint = "there is more after the JSON value: two files run together, or a stray edit?";
    }
    Error e = make_error(ErrorKind::kInput, "not valid JSON: " + what, std::move(hint));
    e.file = path.string();
    locate(e, text, at);
    return tl::unexpected(std::move(e));
  } catch (const nlohmann::json::out_of_range& err) {
    // A number past the double range (1e999): nlohmann names the token but not its place.
    return tl::unexpected(out_of_range_error(text, path, err.what()));
  }
}

Expected<nlohmann::json> read_json_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return tl::unexpected(text.error());
  return parse_json(*text, path);
}

std::optional<std::int64_t> json_integer(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return narrow<std::int64_t>(value.get<std::uint64_t>());
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

nlohmann::json json_real(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::optional<double> real_from_json(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!value.is_string()) return std::nullopt;
  const std::string& text = value.get_ref<const std::string&>();
  if (text == "nan" || text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf" || text == "Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-inf" || text == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::string_view json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    case nlohmann::json::value_t::number_float:
      return "a number";
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      return "not JSON";
  }
  return "not JSON";
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace bigmac
