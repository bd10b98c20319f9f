#include "logs/json_line.h"

#include <simdjson.h>

#include <array>
#include <cctype>
#include <cstring>
#include <functional>
#include <span>

#include "logs/number_text.h"

namespace bigmac::logs {

namespace ondemand = simdjson::ondemand;

namespace {

simdjson::error_code read_array(ondemand::value& value, Key key, FieldBag& bag, Slot& slot) {
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

simdjson::error_code read_value(ondemand::value& value, Key key, FieldBag& bag) {
  Slot& slot = bag.set(key);
  ondemand::json_type type;
  if (auto error = value.type().get(type)) return error;
  switch (type) {
    case ondemand::json_type::number: {
      ondemand::number number;
      if (auto error = value.get_number().get(number)) return error;  // parses once
      if (number.get_number_type() == ondemand::number_type::signed_integer) {
        slot.kind = Slot::Kind::kInt;
        slot.i = number.get_int64();
      } else {
        slot.kind = Slot::Kind::kReal;
        slot.d = number.as_double();
      }
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
      return value.get_bool().get(b);
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

// Quotes bare non-finite words outside strings; false when there were none.
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

// A contract key as the parser's buffer holds it (name, closing quote), in three words with a
// mask, so checking a guess is three compares instead of a loop over its bytes.
struct KeyPattern {
  std::array<std::uint64_t, 3> word{};
  std::array<std::uint64_t, 3> mask{};
};

std::array<KeyPattern, static_cast<std::size_t>(Key::kCount)> make_patterns() {
  std::array<KeyPattern, static_cast<std::size_t>(Key::kCount)> patterns{};
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    std::string quoted(key_name(static_cast<Key>(k)));
    quoted += '"';
    std::array<unsigned char, 24> bytes{};
    std::array<unsigned char, 24> ones{};
    for (std::size_t i = 0; i < quoted.size() && i < bytes.size(); ++i) {
      bytes[i] = static_cast<unsigned char>(quoted[i]);
      ones[i] = 0xff;
    }
    std::memcpy(patterns[k].word.data(), bytes.data(), bytes.size());
    std::memcpy(patterns[k].mask.data(), ones.data(), ones.size());
  }
  return patterns;
}

// Writers print an event's fields in a fixed order, so the key after key K is most likely the
// one that followed K last time: checking that guess first skips the hash on most fields.
struct KeyGuess {
  static constexpr std::size_t kStart = static_cast<std::size_t>(Key::kCount);
  std::array<Key, kStart + 1> next;
  std::array<KeyPattern, kStart> patterns = make_patterns();
  KeyGuess() { next.fill(Key::kEv); }

  // `raw` is the key text after its opening quote in the parser's padded buffer, so the 24
  // bytes read here are readable whatever the key's length.
  std::optional<Key> find(std::size_t previous, const char* raw) {
    Key guess = next[previous];
    const KeyPattern& p = patterns[static_cast<std::size_t>(guess)];
    std::array<std::uint64_t, 3> w;
    std::memcpy(w.data(), raw, sizeof w);
    // Branch-free: equal under the mask in all three words.
    if ((((w[0] ^ p.word[0]) & p.mask[0]) | ((w[1] ^ p.word[1]) & p.mask[1]) |
         ((w[2] ^ p.word[2]) & p.mask[2])) == 0) {
      return guess;
    }
    const char* end = raw;
    while (*end != '"') ++end;
    std::optional<Key> key = find_key({raw, static_cast<std::size_t>(end - raw)});
    if (key) next[previous] = *key;
    return key;
  }
};

// The fields of the object `doc` holds, into the bag.
template <class Document>
simdjson::error_code read_object(Document& doc, FieldBag& bag, KeyGuess& guess) {
  ondemand::object object;
  if (auto error = doc.get_object().get(object)) return error;
  std::size_t previous = KeyGuess::kStart;
  for (auto item : object) {
    ondemand::field field;
    if (auto error = std::move(item).get(field)) return error;
    std::optional<Key> key = guess.find(previous, field.key().raw());
    if (!key) continue;  // unknown fields are for newer readers
    previous = static_cast<std::size_t>(*key);
    if (auto error = read_value(field.value(), *key, bag)) return error;
  }
  return simdjson::SUCCESS;
}

}  // namespace

struct JsonLineReader::Impl {
  ondemand::parser parser;        // read(): one line
  ondemand::parser batch_parser;  // read_lines(): its stream stays valid while read() runs
  std::string copy;
  std::string quoted;
  KeyGuess guess;

  Impl() { batch_parser.threaded = false; }  // one core: no stage-1 worker thread

  simdjson::error_code parse(const char* data, std::size_t size, std::size_t capacity,
                             FieldBag& bag) {
    ondemand::document doc;
    if (auto error = parser.iterate(data, size, capacity).get(doc)) return error;
    if (auto error = read_object(doc, bag, guess)) return error;
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

JsonLineReader::JsonLineReader() : impl_(std::make_unique<Impl>()) {}
JsonLineReader::~JsonLineReader() = default;
JsonLineReader::JsonLineReader(JsonLineReader&&) noexcept = default;
JsonLineReader& JsonLineReader::operator=(JsonLineReader&&) noexcept = default;

std::size_t JsonLineReader::padding() { return simdjson::SIMDJSON_PADDING; }

bool JsonLineReader::read(std::string_view line, std::size_t readable, FieldBag& bag,
                          std::string& error) {
  bag.clear();
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

std::size_t JsonLineReader::read_lines(std::string_view text, std::size_t readable,
                                       std::span<const std::size_t> line_ends, FieldBag& bag,
                                       const std::function<void(std::size_t)>& on_line) {
  if (line_ends.empty() || readable < text.size() + simdjson::SIMDJSON_PADDING) return 0;
  // Every line is at most max_line_bytes (the caller's bound); the batch must hold the longest.
  ondemand::document_stream stream;
  if (impl_->batch_parser.iterate_many(text.data(), text.size(), kBatchBytes).get(stream)) return 0;
  std::size_t line = 0;
  std::size_t line_start = 0;
  for (auto it = stream.begin(); it != stream.end() && line < line_ends.size(); ++it) {
    // Vouch only for a document that starts its line and ends it (bar blanks): two objects on
    // a line, or one spread over two, go back to read() to be judged on their own.
    if (it.error() || it.current_index() != line_start) return line;
    ondemand::document_reference doc;
    if ((*it).get(doc)) return line;
    bag.clear();
    if (read_object(doc, bag, impl_->guess)) return line;
    // The next token must start the next line. At the end of a stage-1 window there is no
    // next token to look at; that line is checked again on its own.
    const char* next = nullptr;
    simdjson::error_code where = doc.current_location().get(next);
    if (where == simdjson::OUT_OF_BOUNDS) {
      std::string_view single = text.substr(line_start, line_ends[line] - line_start);
      bag.clear();
      if (impl_->parse_any(single, readable - line_start, bag)) return line;
    } else if (where || next != text.data() + line_ends[line] + 1) {
      return line;
    }
    on_line(line);
    line_start = line_ends[line] + 1;
    ++line;
  }
  return line;
}

}  // namespace bigmac::logs
