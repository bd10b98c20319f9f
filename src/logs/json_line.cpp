#include "logs/json_line.h"

#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

#include "logs/flat_json.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace ondemand = simdjson::ondemand;

namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

simdjson::error_code read_array(ondemand::value& value, FieldKey key, FieldBag& bag, Slot& slot) {
  ondemand::array array;
  if (auto error = value.get_array().get(array)) return error;
  auto& ints = bag.int_list(key);
  auto& strings = bag.str_list(key);
  slot.kind = Slot::Kind::kIntList;
  bool mixed = false;
  for (auto element : array) {
    ondemand::value item;
    if (auto error = std::move(element).get(item)) return error;
    ondemand::json_type type;
    if (auto error = item.type().get(type)) return error;
    if (type == ondemand::json_type::number && strings.empty()) {
      std::int64_t v = 0;
      if (item.get_int64().get(v)) {
        mixed = true;
      } else {
        ints.push_back(v);
      }
    } else if (type == ondemand::json_type::string && ints.empty()) {
      std::string_view s;
      if (auto error = item.get_string().get(s)) return error;
      strings.emplace_back(s);
      slot.kind = Slot::Kind::kStrList;
    } else {
      mixed = true;  // keep iterating so the parser validates the rest
    }
  }
  if (mixed) slot.kind = Slot::Kind::kOther;
  return simdjson::SUCCESS;
}

simdjson::error_code read_value(ondemand::value& value, FieldKey key, FieldBag& bag) {
  Slot& slot = bag.set(key);
  ondemand::json_type type;
  if (auto error = value.type().get(type)) return error;
  switch (type) {
    case ondemand::json_type::number: {
      ondemand::number_type number_type;
      if (auto error = value.get_number_type().get(number_type)) return error;
      if (number_type == ondemand::number_type::signed_integer) {
        slot.kind = Slot::Kind::kInt;
        return value.get_int64().get(slot.i);
      }
      slot.kind = Slot::Kind::kReal;
      std::string_view token = value.raw_json_token();
      if (auto error = value.get_double().get(slot.d)) return error;  // also validates
      // simdjson 3.0's own conversion goes wrong on some reals of many digits (its get_number()
      // gives 0 past 19 digits; get_double() gives 4.2e-19 for 0.12345678901234567899999999...),
      // found by comparing it with the flat reader. std::from_chars rounds correctly; where it
      // cannot (underflow), simdjson's value stands.
      while (!token.empty() && is_json_space(token.back())) token.remove_suffix(1);
      double exact = 0;
      auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), exact);
      if (ec == std::errc{} && end == token.data() + token.size()) slot.d = exact;
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::string:
      slot.kind = Slot::Kind::kString;
      return value.get_string().get(slot.s);
    case ondemand::json_type::array:
      return read_array(value, key, bag, slot);
    case ondemand::json_type::boolean: {
      bool b = false;
      slot.kind = Slot::Kind::kBool;
      const auto error = value.get_bool().get(b);
      slot.i = b ? 1 : 0;
      return error;
    }
    case ondemand::json_type::null:
      slot.kind = Slot::Kind::kOther;
      return value.is_null().error();
    case ondemand::json_type::object:
      slot.kind = Slot::Kind::kOther;
      return simdjson::SUCCESS;  // skipped (and validated) by the object iterator
  }
  return simdjson::INCORRECT_TYPE;
}

// The length of the JSON number at the start of `text` when it is past the double range
// (1e999, -1e400: Python's json reads them as ±inf), else 0. Underflow (1e-999) is a number.
std::size_t overflowing_number(std::string_view text) {
  std::size_t k = text.front() == '-' ? 1 : 0;
  while (k < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[k])) || text[k] == '.' || text[k] == 'e' ||
          text[k] == 'E' || text[k] == '+' || text[k] == '-')) {
    ++k;
  }
  const std::optional<double> value = parse_real(text.substr(0, k));
  return value && std::isinf(*value) ? k : 0;
}

// Quotes bare non-finite words and numbers past the double range outside strings, so that they
// are read as the non-finite values they stand for; false when there were none.
bool quote_nonfinite(std::string_view line, std::string& out) {
  out.clear();
  out.reserve(line.size() + 16);
  bool in_string = false;
  bool changed = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < line.size()) {
        out.push_back(line[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    bool sign = c == '-' || c == '+';
    std::size_t j = sign ? i + 1 : i;
    if (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j])) &&
        !(i > 0 && std::isalnum(static_cast<unsigned char>(line[i - 1])))) {
      const std::size_t n = c == '+' ? 0 : overflowing_number(line.substr(i));
      if (n > 0) {
        out.push_back('"');
        out.append(line.substr(i, n));
        out.push_back('"');
        changed = true;
        i += n - 1;
        continue;
      }
    }
    std::size_t k = j;
    while (k < line.size() && ((line[k] | 0x20) >= 'a' && (line[k] | 0x20) <= 'z')) ++k;
    if (k > j && (j == i || !(i > 0 && std::isalnum(static_cast<unsigned char>(line[i - 1]))))) {
      std::string_view word = line.substr(i, k - i);
      if (is_nonfinite_word(word)) {
        out.push_back('"');
        out.append(word);
        out.push_back('"');
        changed = true;
        i = k - 1;
        continue;
      }
      if (!sign) {
        out.append(word);  // true/false/null and other words pass through whole
        i = k - 1;
        continue;
      }
    }
    out.push_back(c);
  }
  return changed;
}

// The fields of the object `doc` holds, into the bag.
template <class Document>
simdjson::error_code read_object(Document& doc, FieldBag& bag) {
  ondemand::object object;
  if (auto error = doc.get_object().get(object)) return error;
  for (auto item : object) {
    ondemand::field field;
    if (auto error = std::move(item).get(field)) return error;
    // The key's text up to its closing quote; keys with escaped quotes are no contract key.
    const char* raw = field.key().raw();
    const char* end = raw;
    while (*end != '"') ++end;
    std::optional<FieldKey> key = find_key({raw, static_cast<std::size_t>(end - raw)});
    if (!key) continue;  // unknown fields are for newer readers
    if (auto error = read_value(field.value(), *key, bag)) return error;
  }
  return simdjson::SUCCESS;
}

}  // namespace

struct JsonLineReader::Impl {
  ondemand::parser parser;
  std::string copy;
  std::string quoted;
  FlatJsonReader flat;

  simdjson::error_code parse(const char* data, std::size_t size, std::size_t capacity,
                             FieldBag& bag) {
    ondemand::document doc;
    if (auto error = parser.iterate(data, size, capacity).get(doc)) return error;
    if (auto error = read_object(doc, bag)) return error;
    // Past the object the iterator must be at the end: `{...} junk` is not one object.
    return doc.current_location().error() == simdjson::OUT_OF_BOUNDS ? simdjson::SUCCESS
                                                                     : simdjson::TRAILING_CONTENT;
  }

  simdjson::error_code parse_any(std::string_view line, std::size_t readable, FieldBag& bag) {
    if (readable >= line.size() + simdjson::SIMDJSON_PADDING) {
      return parse(line.data(), line.size(), readable, bag);
    }
    copy.assign(line);
    copy.resize(line.size() + simdjson::SIMDJSON_PADDING, ' ');
    return parse(copy.data(), line.size(), copy.size(), bag);
  }
};

JsonLineReader::JsonLineReader(Path path) : impl_(std::make_unique<Impl>()), path_(path) {}
JsonLineReader::~JsonLineReader() = default;
JsonLineReader::JsonLineReader(JsonLineReader&&) noexcept = default;
JsonLineReader& JsonLineReader::operator=(JsonLineReader&&) noexcept = default;

bool JsonLineReader::read(std::string_view line, std::size_t readable, FieldBag& bag,
                          std::string& error) {
  bag.clear();
  if (path_ == Path::kFlatFirst) {
    if (impl_->flat.read(line, readable, bag) == FlatJson::kRead) return true;
    bag.clear();
  }
  simdjson::error_code code = impl_->parse_any(line, readable, bag);
  if (code == simdjson::SUCCESS) return true;
  if (quote_nonfinite(line, impl_->quoted)) {
    bag.clear();
    std::string quoted = std::move(impl_->quoted);
    code = impl_->parse_any(quoted, quoted.size(), bag);
    // The bag's strings point into `quoted`; keep it alive until the next line.
    impl_->quoted = std::move(quoted);
    if (code == simdjson::SUCCESS) return true;
  }
  error = std::string("invalid JSON: ") + simdjson::error_message(code);
  if (error.back() == '.') error.pop_back();  // the excerpt follows after a colon
  return false;
}

}  // namespace bigmac::logs
