#include "logs/flat_json.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

namespace bigmac::logs {

namespace {

// Exact powers of ten as doubles: 10^0 .. 10^22 are all representable.
constexpr std::array<double, 23> kPowersOfTen{1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                              1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                              1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
constexpr std::uint64_t kMaxExactMantissa = (std::uint64_t{1} << 53) - 1;

// Bytes a string may hold on this path: printable ASCII bar '"' and '\'. Control bytes are
// invalid JSON, escapes need unescaping, and anything >= 0x80 needs UTF-8 validation; all of
// those go to simdjson.
constexpr std::array<bool, 256> kPlainStringByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return plain;
}();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Every reader below takes the position and the line's end and returns the position after what
// it read, or nullptr to defer. Single bytes are read before `end` only; whole words may be
// loaded up to `limit` (readable slack past the line), but nothing past `end` decides anything.

const char* skip_space(const char* p, const char* end) {
  // All four JSON whitespace bytes are <= ' ', so one compare settles the usual case.
  while (p != end && static_cast<unsigned char>(*p) <= ' ' &&
         (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
    ++p;
  }
  return p;
}

// Past the byte `c` at p, or after whitespace: the usual case, no whitespace, is one compare.
const char* expect(const char* p, const char* end, char c) {
  if (p != end && *p == c) return p + 1;
  p = skip_space(p, end);
  return p != end && *p == c ? p + 1 : nullptr;
}

// `word` (true, false, null) at p.
const char* literal(const char* p, const char* end, std::string_view word) {
  if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) {
    return nullptr;
  }
  return p + word.size();
}

std::uint64_t load8(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr std::uint64_t kOnes = 0x0101010101010101;
constexpr std::uint64_t kHighs = 0x8080808080808080;

// Index of the first flagged byte of a SWAR mask, 8 when none is, on a little-endian machine.
// Branch-free: countr_zero of 0 is 64.
int first_byte(std::uint64_t mask) { return std::countr_zero(mask) / 8; }

// High bits set in the bytes of `v` (8 bytes of text) that may not stand in a string here:
// '"', '\\', control bytes, bytes >= 0x80. The subtraction tricks can also flag bytes above a
// flagged one, never below, so the lowest flag is exact.
std::uint64_t special_string_bytes(std::uint64_t v) {
  std::uint64_t quote = v ^ (kOnes * '"');
  std::uint64_t backslash = v ^ (kOnes * '\\');
  return (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
          ((v - kOnes * 0x20) & ~v) | v) &
         kHighs;
}

// The body of a string whose opening quote is behind p. Words are loaded while `limit` allows;
// a stop found past `end` defers.
[[gnu::always_inline]] inline const char* read_string(const char* p, const char* end,
                                                      const char* limit, std::string_view& out) {
  const char* start = p;
  while (true) {
    if (limit - p >= 8) {
      std::uint64_t special = special_string_bytes(load8(p));
      if (special == 0) {
        p += 8;
        continue;
      }
      p += first_byte(special);
    } else {
      while (p != end && kPlainStringByte[static_cast<unsigned char>(*p)]) ++p;
    }
    break;
  }
  if (p >= end || *p != '"') return nullptr;  // an escape, another byte, or the line ended
  out = std::string_view(start, static_cast<std::size_t>(p - start));
  return p + 1;
}

// Bytes of `v` that are not ASCII digits (nonzero bytes). v + 6 can carry only out of a byte
// >= 0xfa, which is flagged itself, so again the lowest flag is exact.
std::uint64_t non_digit_bytes(std::uint64_t v) {
  constexpr std::uint64_t kHighNibbles = 0xf0f0f0f0f0f0f0f0;
  return ((v & kHighNibbles) ^ (kOnes * 0x30)) |
         (((v + kOnes * 6) & kHighNibbles) ^ (kOnes * 0x30));
}

constexpr std::array<std::uint64_t, 9> kPow10Int{1,      10,      100,      1000,     10000,
                                                 100000, 1000000, 10000000, 100000000};

// The value of the first `n` (1..8) bytes of `v`, all ASCII digits, the first the most
// significant: pairs, then quads, then the whole, in three multiplications.
std::uint64_t digits_value(std::uint64_t v, int n) {
  std::uint64_t d = (v - kOnes * '0') << (8 * (8 - n));  // leading zero digits fill in
  d = d * 10 + (d >> 8);                                 // even bytes: 10 * b[i] + b[i+1]
  constexpr std::uint64_t kPairs = 0x000000ff000000ff;
  return (((d & kPairs) * (100 + (std::uint64_t{1000000} << 32))) +
          (((d >> 16) & kPairs) * (1 + (std::uint64_t{10000} << 32)))) >>
         32;
}

// A run of digits: `digits` counts them, `mantissa` holds their value while digits <= 19.
const char* read_digits(const char* p, const char* end, std::uint64_t& mantissa, int& digits) {
  while (end - p >= 8) {
    std::uint64_t v = load8(p);
    int n = first_byte(non_digit_bytes(v));
    if (n == 0) return p;
    if (digits + n <= 19) {
      mantissa = mantissa * kPow10Int[static_cast<std::size_t>(n)] + digits_value(v, n);
    }
    digits += n;
    p += n;
    if (n < 8) return p;
  }
  for (; p != end && is_digit(*p); ++p, ++digits) {
    if (digits < 19) mantissa = mantissa * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  return p;
}

struct Number {
  bool integer = true;
  std::int64_t i = 0;
  double d = 0;
};

// A number read for a field, into its slot (none: a field nobody reads).
void store_number(Slot* slot, const Number& n) {
  if (slot == nullptr) return;
  if (n.integer) {
    slot->kind = Slot::Kind::kInt;
    slot->i = n.i;
  } else {
    slot->kind = Slot::Kind::kReal;
    slot->d = n.d;
  }
}

// One JSON number (RFC 8259 grammar) starting at p, which holds '-' or a digit; any length
// and form, reading no byte at or past `end`.
const char* read_any_number(const char* p, const char* end, Number& n) {
  const char* start = p;
  bool negative = *p == '-';
  if (negative) ++p;
  if (p == end || !is_digit(*p)) return nullptr;
  std::uint64_t mantissa = 0;
  int digits = 0;
  if (*p == '0') {
    ++p;
    if (p != end && is_digit(*p)) return nullptr;  // leading zero
  } else {
    p = read_digits(p, end, mantissa, digits);
  }
  int exponent = 0;
  if (p != end && *p == '.') {
    n.integer = false;
    const char* fraction = p + 1;
    p = read_digits(fraction, end, mantissa, digits);
    if (p == fraction) return nullptr;
    exponent = -static_cast<int>(p - fraction);
  }
  if (p != end && (*p == 'e' || *p == 'E')) {
    n.integer = false;
    ++p;
    bool minus = p != end && *p == '-';
    if (p != end && (*p == '-' || *p == '+')) ++p;
    const char* first = p;
    int e = 0;
    for (; p != end && is_digit(*p); ++p) {
      if (e < 100000) e = e * 10 + (*p - '0');
    }
    // simdjson refuses exponents of many digits (1e000...0 is valid JSON); so does this path.
    if (p == first || p - first > 4) return nullptr;
    exponent += minus ? -e : e;
  }
  if (n.integer) {
    if (digits > 18) return nullptr;  // may not fit; simdjson decides
    auto magnitude = static_cast<std::int64_t>(mantissa);
    n.i = negative ? -magnitude : magnitude;
    return p;
  }
  if (digits <= 19 && mantissa <= kMaxExactMantissa && exponent >= -22 && exponent <= 22) {
    // Both operands are exact, so the one rounding of * or / is the correct one.
    double d = static_cast<double>(mantissa);
    d = exponent < 0 ? d / kPowersOfTen[static_cast<std::size_t>(-exponent)]
                     : d * kPowersOfTen[static_cast<std::size_t>(exponent)];
    n.d = negative ? -d : d;
    return p;
  }
  auto [ptr, ec] = std::from_chars(start, p, n.d);
  return ec == std::errc{} && ptr == p && std::isfinite(n.d) ? p : nullptr;
}

// Leading digits among the 8 bytes of `v`.
int digit_run(std::uint64_t v) { return first_byte(non_digit_bytes(v)); }

// read_any_number for the numbers logs are made of: up to 15 integer digits, up to 15 fraction
// digits, 19 in all, no exponent. Whole words are loaded up to `limit` (readable, maybe past
// `end`); a number that does not fit that shape, or runs to `end`, is read again by
// read_any_number.
[[gnu::always_inline]] inline const char* read_number(const char* p, const char* end,
                                                      const char* limit, Number& n) {
  const char* start = p;
  bool negative = *p == '-';
  p += negative ? 1 : 0;
  if (limit - p < 16) return read_any_number(start, end, n);
  if (is_digit(*p) && !is_digit(p[1]) && p[1] != '.' && p[1] != 'e' && p[1] != 'E') {
    // One digit: ranks, stages, micro-batches.
    std::int64_t digit = *p - '0';
    n.i = negative ? -digit : digit;
    return p + 1;
  }
  std::uint64_t v = load8(p);
  int digits = digit_run(v);
  if (digits == 0) return nullptr;
  std::uint64_t mantissa = 0;
  if (digits < 8) {
    mantissa = digits_value(v, digits);
  } else {
    std::uint64_t w = load8(p + 8);
    int more = digit_run(w);
    if (more == 8) return read_any_number(start, end, n);
    mantissa = digits_value(v, 8);
    if (more > 0)
      mantissa = mantissa * kPow10Int[static_cast<std::size_t>(more)] + digits_value(w, more);
    digits += more;
  }
  if (*p == '0' && digits > 1) return nullptr;  // leading zero
  const char* q = p + digits;
  if (q >= end) return read_any_number(start, end, n);
  if (*q == '.') {
    const char* fraction = q + 1;
    if (limit - fraction < 8) return read_any_number(start, end, n);
    std::uint64_t f = load8(fraction);
    int places = digit_run(f);
    if (places == 0) return nullptr;
    if (digits + places > 19) return read_any_number(start, end, n);
    mantissa = mantissa * kPow10Int[static_cast<std::size_t>(places)] + digits_value(f, places);
    if (places == 8) {  // `%.8f` learning rates: one more word
      if (limit - fraction < 16) return read_any_number(start, end, n);
      std::uint64_t g = load8(fraction + 8);
      int more = digit_run(g);
      if (more == 8 || digits + places + more > 19) return read_any_number(start, end, n);
      if (more > 0) {
        mantissa = mantissa * kPow10Int[static_cast<std::size_t>(more)] + digits_value(g, more);
      }
      places += more;
    }
    q = fraction + places;
    if (q >= end || *q == 'e' || *q == 'E') return read_any_number(start, end, n);
    // Past 19 digits the mantissa above would overflow, and past 2^53 a double cannot hold it
    // exactly; both go to the general reader.
    if (mantissa > kMaxExactMantissa) return read_any_number(start, end, n);
    // Exact operands, so the one rounding of the division is the correct one (Clinger).
    double d = static_cast<double>(mantissa) / kPowersOfTen[static_cast<std::size_t>(places)];
    n.integer = false;
    n.d = negative ? -d : d;
    return q;
  }
  if (*q == 'e' || *q == 'E') return read_any_number(start, end, n);
  auto magnitude = static_cast<std::int64_t>(mantissa);  // at most 15 digits
  n.i = negative ? -magnitude : magnitude;
  return q;
}

// `[...]` after its '[', kept as JsonLineReader's read_array keeps it: integers or strings,
// kOther when the kinds mix. `slot` is null for a field nobody reads.
const char* read_list(const char* p, const char* end, const char* limit, FieldKey key, Slot* slot,
                      FieldBag& bag) {
  std::vector<std::int64_t>* ints = nullptr;
  std::vector<std::string>* strings = nullptr;
  if (slot != nullptr) {
    ints = &bag.int_list(key);
    strings = &bag.str_list(key);
    slot->kind = Slot::Kind::kIntList;
  }
  bool mixed = false;
  p = skip_space(p, end);
  if (p != end && *p == ']') return p + 1;
  while (true) {
    p = skip_space(p, end);
    if (p == end) return nullptr;
    char c = *p;
    if (c == '"') {
      std::string_view text;
      if ((p = read_string(p + 1, end, limit, text)) == nullptr) return nullptr;
      if (slot != nullptr) {
        if (ints->empty()) {
          strings->emplace_back(text);
          slot->kind = Slot::Kind::kStrList;
        } else {
          mixed = true;
        }
      }
    } else if (c == '-' || is_digit(c)) {
      Number n;
      if ((p = read_number(p, end, limit, n)) == nullptr) return nullptr;
      if (slot != nullptr) {
        if (strings->empty() && n.integer) {
          ints->push_back(n.i);
        } else {
          mixed = true;
        }
      }
    } else {
      const char* after = literal(p, end, c == 't' ? "true" : c == 'f' ? "false" : "null");
      if (after == nullptr) return nullptr;  // nested list or object, or not JSON
      p = after;
      mixed = true;
    }
    p = skip_space(p, end);
    if (p == end) return nullptr;
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p != ']') return nullptr;
    ++p;
    break;
  }
  if (slot != nullptr && mixed) slot->kind = Slot::Kind::kOther;
  return p;
}

// One field's value; `key` is empty for a field the contract does not name (validated, then
// dropped, as simdjson's object iterator skips it).
const char* read_field_value(const char* p, const char* end, const char* limit,
                             std::optional<FieldKey> key, FieldBag& bag) {
  if (p == end) return nullptr;
  if (static_cast<unsigned char>(*p) <= ' ') {
    p = skip_space(p, end);
    if (p == end) return nullptr;
  }
  Slot* slot = key ? &bag.set(*key) : nullptr;
  char c = *p;
  if (c == '"') {
    std::string_view text;
    p = read_string(p + 1, end, limit, text);
    if (slot != nullptr) {
      slot->kind = Slot::Kind::kString;
      slot->s = text;
    }
    return p;
  }
  if (c == '-' || is_digit(c)) {
    Number n;
    p = read_number(p, end, limit, n);
    store_number(slot, n);
    return p;
  }
  if (c == '[') return read_list(p + 1, end, limit, key.value_or(FieldKey::kCount), slot, bag);
  if (c == 't' || c == 'f') {
    if (slot != nullptr) {
      slot->kind = Slot::Kind::kBool;
      slot->i = c == 't' ? 1 : 0;
    }
    return literal(p, end, c == 't' ? "true" : "false");
  }
  // null stays kOther, as set() left it; anything else ('{', NaN, garbage) is deferred.
  return literal(p, end, "null");
}

}  // namespace

namespace flat_detail {

// Up to 24 bytes of expected text as three words and masks: checking it is three compares.
struct Literal {
  std::array<std::uint64_t, 3> word{};
  std::array<std::uint64_t, 3> mask{};
  std::size_t length = 0;
};

// One value of a remembered line shape: the literal text before it (`,"rank":`), its key, and
// whether it was a string (else a number).
struct ShapeField {
  Literal before;
  std::optional<FieldKey> key;
  bool string = false;
};

// A line shape: `{"ev":"<event>"` (or `{"ev": "<event>"`), then fields whose literals and kinds are
// fixed, then the closing literal.
struct Shape {
  std::string event;
  std::size_t opening = 0;         // 7 for `{"ev":"`, 8 for `{"ev": "` (Python's json.dumps)
  std::vector<ShapeField> fields;  // after `ev`
  Literal tail;
  int misses = 0;  // lines of this event read key by key since the shape last fit
};

// The last shape of each event, by a hash of its name (a collision only costs a miss).
struct Shapes {
  std::array<Shape, 16> slots;
};

}  // namespace flat_detail

namespace {

using flat_detail::Literal;
using flat_detail::Shape;
using flat_detail::ShapeField;

constexpr std::size_t kLiteralBytes = 24;

Literal make_literal(std::string_view text) {
  Literal literal;
  std::array<unsigned char, kLiteralBytes> bytes{};
  std::array<unsigned char, kLiteralBytes> ones{};
  for (std::size_t i = 0; i < text.size() && i < kLiteralBytes; ++i) {
    bytes[i] = static_cast<unsigned char>(text[i]);
    ones[i] = 0xff;
  }
  std::memcpy(literal.word.data(), bytes.data(), kLiteralBytes);
  std::memcpy(literal.mask.data(), ones.data(), kLiteralBytes);
  literal.length = std::min(text.size(), kLiteralBytes);
  return literal;
}

// `literal` at p; p must have 24 readable bytes. Most literals fit in one word.
bool matches(const char* p, const Literal& literal) {
  std::uint64_t differ = (load8(p) ^ literal.word[0]) & literal.mask[0];
  if (literal.length <= 8) return differ == 0;
  return (differ | ((load8(p + 8) ^ literal.word[1]) & literal.mask[1]) |
          ((load8(p + 16) ^ literal.word[2]) & literal.mask[2])) == 0;
}

constexpr std::size_t kMaxShapeFields = 48;
// How lines that may have a shape open: compact, or as Python's json.dumps writes them.
constexpr std::string_view kEventOpening = R"({"ev":")";
constexpr std::string_view kSpacedEventOpening = R"({"ev": ")";

// Writes down the shape of a line while the general path reads it.
struct ShapeRecorder {
  bool ok = true;
  bool opened = false;  // the `ev` field was seen first, as `{"ev":"` or `{"ev": "`
  std::size_t opening = 0;
  std::string event;
  std::vector<ShapeField> fields;
  Literal tail;

  void field(const char* literal_start, const char* value_start, std::optional<FieldKey> key,
             const FieldBag& bag) {
    if (!ok) return;
    std::string_view literal(literal_start, static_cast<std::size_t>(value_start - literal_start));
    const char c = *value_start;
    const bool string = c == '"';
    if ((!string && c != '-' && !is_digit(c)) || literal.size() > kLiteralBytes ||
        fields.size() >= kMaxShapeFields) {
      ok = false;
    } else if (!opened) {
      // The first field must be `ev`, a string, written as the fast path expects it.
      opened = true;
      opening = literal.size() + 1;
      ok = key == FieldKey::kEv && string &&
           ((opening == kEventOpening.size() && kEventOpening.starts_with(literal)) ||
            (opening == kSpacedEventOpening.size() && kSpacedEventOpening.starts_with(literal)));
      if (ok) event = bag.at(FieldKey::kEv).s;
      ok = ok && !event.empty();
    } else {
      fields.push_back(ShapeField{make_literal(literal), key, string});
    }
  }

  void close(const char* literal_start, const char* literal_end) {
    const auto length = static_cast<std::size_t>(literal_end - literal_start);
    ok = ok && opened && length <= kLiteralBytes;
    if (ok) tail = make_literal(std::string_view(literal_start, length));
  }
};

// Reads `line` key by key; `recorder`, when given, writes its shape down.
FlatJson read_general(std::string_view line, const char* limit, FieldBag& bag,
                      ShapeRecorder* recorder) {
  const char* end = line.data() + line.size();
  const char* p = skip_space(line.data(), end);
  if (p == end || *p != '{') return FlatJson::kDefer;
  p = skip_space(p + 1, end);
  if (p != end && *p == '}') {
    ++p;
    if (recorder != nullptr) recorder->ok = false;  // no event, no shape
  } else {
    const char* literal_start = line.data();
    while (true) {
      if ((p = expect(p, end, '"')) == nullptr) return FlatJson::kDefer;
      std::string_view name;
      if ((p = read_string(p, end, limit, name)) == nullptr) return FlatJson::kDefer;
      const std::optional<FieldKey> key = find_key(name);
      if ((p = expect(p, end, ':')) == nullptr) return FlatJson::kDefer;
      const char* value_start = p;
      if (recorder != nullptr) value_start = skip_space(p, end);
      if ((p = read_field_value(p, end, limit, key, bag)) == nullptr) return FlatJson::kDefer;
      if (recorder != nullptr) recorder->field(literal_start, value_start, key, bag);
      literal_start = p;
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      p = skip_space(p, end);
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      if (p == end || *p != '}') return FlatJson::kDefer;
      ++p;
      if (recorder != nullptr) recorder->close(literal_start, p);
      break;
    }
  }
  return skip_space(p, end) == end ? FlatJson::kRead : FlatJson::kDefer;
}

const Literal kEventOpeningLiteral = make_literal(kEventOpening);
const Literal kSpacedEventOpeningLiteral = make_literal(kSpacedEventOpening);

std::size_t shape_slot(std::string_view event) {
  return (event.size() * 31 + static_cast<unsigned char>(event.back())) % 16;
}

// `literal` at p, wholly before `end`: by words when 24 bytes are readable, else byte by byte.
[[gnu::always_inline]] inline bool matches_within(const char* p, const char* end, const char* limit,
                                                  const Literal& literal) {
  if (static_cast<std::size_t>(end - p) < literal.length) return false;
  if (static_cast<std::size_t>(limit - p) >= kLiteralBytes) return matches(p, literal);
  return std::memcmp(p, literal.word.data(), literal.length) == 0;  // the words hold the bytes
}

// The fields after `ev` at p, as `shape` says they stand; false when the line is not of that
// shape (the bag then holds part of it).
bool read_shape(const Shape& shape, const char* p, const char* end, const char* limit,
                FieldBag& bag) {
  for (const ShapeField& field : shape.fields) {
    // The literal, and a value after it.
    if (!matches_within(p, end, limit, field.before) ||
        end - p == static_cast<std::ptrdiff_t>(field.before.length)) {
      return false;
    }
    p += field.before.length;
    Slot* slot = field.key ? &bag.set(*field.key) : nullptr;
    if (field.string) {
      std::string_view text;
      if (*p != '"' || (p = read_string(p + 1, end, limit, text)) == nullptr) return false;
      if (slot != nullptr) {
        slot->kind = Slot::Kind::kString;
        slot->s = text;
      }
    } else {
      Number n;
      if ((*p != '-' && !is_digit(*p)) || (p = read_number(p, end, limit, n)) == nullptr) {
        return false;
      }
      store_number(slot, n);
    }
  }
  return matches_within(p, end, limit, shape.tail) && skip_space(p + shape.tail.length, end) == end;
}

}  // namespace

FlatJsonReader::FlatJsonReader() : shapes_(std::make_unique<flat_detail::Shapes>()) {}
FlatJsonReader::~FlatJsonReader() = default;
FlatJsonReader::FlatJsonReader(FlatJsonReader&&) noexcept = default;
FlatJsonReader& FlatJsonReader::operator=(FlatJsonReader&&) noexcept = default;

FlatJson FlatJsonReader::read(std::string_view line, std::size_t readable, FieldBag& bag) {
  const char* end = line.data() + line.size();
  const char* limit = line.data() + std::max(readable, line.size());
  // A line that opens with `{"ev":"` may be of the shape its event had last time.
  Shape* shape = nullptr;
  bool known_event = false;
  std::size_t opening = 0;
  if (matches_within(line.data(), end, limit, kEventOpeningLiteral)) {
    opening = kEventOpening.size();
  } else if (matches_within(line.data(), end, limit, kSpacedEventOpeningLiteral)) {
    opening = kSpacedEventOpening.size();
  }
  if (opening != 0) {
    const char* p = line.data() + opening;
    std::string_view event;
    if ((p = read_string(p, end, limit, event)) != nullptr && !event.empty()) {
      shape = &shapes_->slots[shape_slot(event)];
      known_event = shape->opening == opening && same_short_text(shape->event, event);
      if (known_event) {
        Slot& slot = bag.set(FieldKey::kEv);
        slot.kind = Slot::Kind::kString;
        slot.s = event;
        if (read_shape(*shape, p, end, limit, bag)) {
          shape->misses = 0;
          ++shaped_lines_;
          return FlatJson::kRead;
        }
        bag.clear();
        ++shape->misses;
      }
    }
  }
  // Key by key; the shape is written down when the event has none, or its shape keeps missing.
  const bool record = shape != nullptr && (!known_event || shape->misses >= 2);
  ShapeRecorder recorder;
  FlatJson result = read_general(line, limit, bag, record ? &recorder : nullptr);
  if (result == FlatJson::kRead && record && recorder.ok) {
    shape->event = std::move(recorder.event);
    shape->opening = recorder.opening;
    shape->fields = std::move(recorder.fields);
    shape->tail = recorder.tail;
    shape->misses = 0;
  }
  return result;
}

}  // namespace bigmac::logs
