#include "config/value_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/toml_source.h"
#include "core/checked_integer.h"
#include "core/printable.h"
#include "core/trim.h"

namespace bigmac::config {
namespace {

std::string describe_node(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return fmt::format("string \"{}\"", node.value_or(std::string()));
    case toml::node_type::integer:
      return "integer " + toml_value_text(node);
    case toml::node_type::floating_point:
      return "number " + toml_value_text(node);
    case toml::node_type::boolean:
      return "boolean " + toml_value_text(node);
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time " + toml_value_text(node);
  }
}

// -1 below, 0 inside, 1 above [lo, hi]; integers compared as integers, so no limit is blurred
// by a conversion to double.
template <class T>
int side_of(T v, std::optional<std::int64_t> lo, std::optional<std::int64_t> hi) {
  if (lo && v < static_cast<T>(*lo)) return -1;
  if (hi && v > static_cast<T>(*hi)) return 1;
  return 0;
}

tl::expected<Value, std::string> check_limits(const SchemaEntry& entry, Value value) {
  const auto* i = std::get_if<std::int64_t>(&value);
  const auto* d = std::get_if<double>(&value);
  if (d && !std::isfinite(*d)) {
    return tl::unexpected(fmt::format("expected a finite number, found {}", *d));
  }
  if (i || d) {
    const int side = i ? side_of(*i, entry.min, entry.max) : side_of(*d, entry.min, entry.max);
    const bool on_min = entry.min && (i ? *i == *entry.min : *d == static_cast<double>(*entry.min));
    // Keys in seconds say so: "must be at least 1 s" reads as the floor of a time limit.
    const std::string_view unit = entry.key.ends_with("_s") ? " s" : "";
    if (side < 0 || (entry.above_min && on_min)) {
      return tl::unexpected(fmt::format("must be {} {}{}, found {}",
                                        entry.above_min ? "more than" : "at least", *entry.min,
                                        unit, value_to_string(value)));
    }
    if (side > 0) {
      return tl::unexpected(
          fmt::format("must be at most {}, found {}", *entry.max, value_to_string(value)));
    }
  }
  if (auto* s = std::get_if<std::string>(&value); s && !entry.choices.empty()) {
    if (std::find(entry.choices.begin(), entry.choices.end(), *s) == entry.choices.end()) {
      std::vector<std::string> quoted;
      for (std::string_view c : entry.choices) quoted.push_back(fmt::format("\"{}\"", c));
      return tl::unexpected(
          fmt::format("expected one of {}, found \"{}\"", fmt::join(quoted, ", "), *s));
    }
  }
  if (entry.type == ValueType::kSplitPoints) {
    if (auto* s = std::get_if<std::string>(&value); s && *s != "auto") {
      return tl::unexpected(
          fmt::format("expected \"auto\" or an array of integers, found \"{}\"", *s));
    }
  }
  return value;
}

tl::expected<Value, std::string> mismatch(const SchemaEntry& entry, const std::string& found) {
  return tl::unexpected(fmt::format("expected {}, found {}", type_name(entry.type), found));
}

}  // namespace

tl::expected<Value, std::string> value_from_toml(const SchemaEntry& entry, const toml::node& node) {
  switch (entry.type) {
    case ValueType::kBool:
      if (auto v = node.value_exact<bool>()) return check_limits(entry, *v);
      break;
    case ValueType::kInt:
      if (auto v = node.value_exact<std::int64_t>()) return check_limits(entry, *v);
      break;
    case ValueType::kFloat:
      if (auto v = node.value_exact<double>()) return check_limits(entry, *v);
      if (auto v = node.value_exact<std::int64_t>()) {
        return check_limits(entry, static_cast<double>(*v));
      }
      break;
    case ValueType::kString:
      if (auto v = node.value_exact<std::string>()) return check_limits(entry, *v);
      break;
    case ValueType::kStringList:
      if (const toml::array* array = node.as_array()) {
        std::vector<std::string> items;
        for (std::size_t i = 0; i < array->size(); ++i) {
          auto item = array->get(i)->value_exact<std::string>();
          if (!item) {
            return tl::unexpected(fmt::format("expected an array of strings, element {} is {}", i,
                                              describe_node(*array->get(i))));
          }
          items.push_back(*item);
        }
        return Value{items};
      }
      break;
    case ValueType::kSplitPoints:
      if (auto v = node.value_exact<std::string>()) return check_limits(entry, *v);
      if (const toml::array* array = node.as_array()) {
        std::vector<std::int64_t> items;
        for (std::size_t i = 0; i < array->size(); ++i) {
          auto item = array->get(i)->value_exact<std::int64_t>();
          if (!item) {
            return tl::unexpected(fmt::format("expected an array of integers, element {} is {}", i,
                                              describe_node(*array->get(i))));
          }
          if (!narrow<int>(*item)) {
            return tl::unexpected(
                fmt::format("split point {} is out of range (element {})", *item, i));
          }
          items.push_back(*item);
        }
        return Value{items};
      }
      break;
  }
  return mismatch(entry, describe_node(node));
}

tl::expected<Value, std::string> value_from_text(const SchemaEntry& entry, std::string_view text) {
  if (entry.type == ValueType::kString) {
    std::string s(text);
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
      s = s.substr(1, s.size() - 2);
    }
    return check_limits(entry, s);
  }
  if (entry.type == ValueType::kSplitPoints && text == "auto") {
    return check_limits(entry, std::string(text));
  }
  if (entry.type == ValueType::kBool) {
    if (text == "true" || text == "1" || text == "yes" || text == "on") return Value{true};
    if (text == "false" || text == "0" || text == "no" || text == "off") return Value{false};
    return mismatch(entry, fmt::format("\"{}\"", text));
  }
  // Everything else is read with TOML's own syntax ("8", "3e-4", "[2, 4]", '["a", "b"]').
  std::string doc = "v = " + std::string(text);
  try {
    toml::table parsed = toml::parse(doc);
    if (const toml::node* node = parsed.get("v")) {
      // One value and nothing after it: `1 # comment` parses as 1 and `1\nx = 2` as two keys,
      // and what follows would be dropped without a word.
      const toml::source_position end = node->source().end;
      const std::string_view after =
          end.line == 1 && end.column >= 1 ? std::string_view(doc).substr(end.column - 1) : "";
      if (parsed.size() != 1 || end.line != 1 || !trim(after).empty()) {
        return tl::unexpected(fmt::format("expected {} and nothing after it, found \"{}\"",
                                          type_name(entry.type), printable(text)));
      }
      return value_from_toml(entry, *node);
    }
  } catch (const toml::parse_error&) {
    // fall through: not a TOML value
  }
  return mismatch(entry, fmt::format("\"{}\"", text));
}

Value value_from_free_toml(const toml::node& node) {
  if (auto v = node.value_exact<bool>()) return *v;
  if (auto v = node.value_exact<std::int64_t>()) return *v;
  if (auto v = node.value_exact<double>()) return *v;
  if (auto v = node.value_exact<std::string>()) return *v;
  if (const toml::array* array = node.as_array()) {
    std::vector<std::int64_t> ints;
    std::vector<std::string> strings;
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (auto n = array->get(i)->value_exact<std::int64_t>()) {
        ints.push_back(*n);
      } else if (auto text = array->get(i)->value_exact<std::string>()) {
        strings.push_back(*text);  // the string itself, not its quoted TOML spelling
      } else {
        strings.push_back(toml_value_text(*array->get(i)));
      }
    }
    if (strings.empty()) return ints;
    return strings;
  }
  return toml_value_text(node);
}

Value value_from_free_text(std::string_view text) {
  std::string doc = "v = " + std::string(text);
  try {
    toml::table parsed = toml::parse(doc);
    if (const toml::node* node = parsed.get("v")) return value_from_free_toml(*node);
  } catch (const toml::parse_error&) {
    // plain text
  }
  return std::string(text);
}

}  // namespace bigmac::config
