#include "logs/field_bag.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/trim.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

constexpr std::size_t kTableSize = 512;  // room for the keys to find a perfect seed quickly
constexpr std::uint8_t kEmpty = 0xff;
constexpr std::uint32_t kFirstSeed = 2166136261u;  // FNV-1a's offset basis
constexpr std::uint32_t kSeedsTried = 4096;

constexpr std::uint32_t hash_name(std::string_view name, std::uint32_t seed) {
  std::uint32_t h = seed;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;  // FNV-1a
  return (h ^ (h >> 15)) % kTableSize;
}

struct KeyTable {
  std::array<std::uint8_t, kTableSize> slot{};
  std::uint32_t seed = kFirstSeed;
  bool perfect = false;
};

// A perfect hash: the first of kSeedsTried seeds under which every key has its own slot, so a
// lookup is one probe and one compare. The compiler searches, so the search is bounded and
// start-up does nothing; a key list that no seed separates fails the build.
constexpr KeyTable make_key_table() {
  KeyTable table;
  for (std::uint32_t n = 0; n < kSeedsTried && !table.perfect; ++n) {
    table.seed = kFirstSeed + n;
    table.slot.fill(kEmpty);
    table.perfect = true;
    for (std::size_t k = 0; k < kFieldKeyNames.size() && table.perfect; ++k) {
      std::uint32_t h = hash_name(kFieldKeyNames[k], table.seed);
      table.perfect = table.slot[h] == kEmpty;
      table.slot[h] = static_cast<std::uint8_t>(k);
    }
  }
  return table;
}

constexpr KeyTable kKeyTable = make_key_table();
static_assert(kKeyTable.perfect,
              "no perfect hash for the contract's field names: widen kTableSize");

const char* kind_name(Slot::Kind kind) {
  switch (kind) {
    case Slot::Kind::kAbsent:
      return "nothing";
    case Slot::Kind::kInt:
      return "an integer";
    case Slot::Kind::kReal:
      return "a real number";
    case Slot::Kind::kString:
      return "a string";
    case Slot::Kind::kText:
      return "text";
    case Slot::Kind::kIntList:
      return "a list of integers";
    case Slot::Kind::kStrList:
      return "a list of strings";
    case Slot::Kind::kBool:
      return "a boolean";
    case Slot::Kind::kOther:
      return "an object or mixed list";
  }
  return "something else";
}

// `[a,b]` or `["a","b"]` from key=value text; false when it is not a bracketed list.
bool split_list(std::string_view text, std::vector<std::string_view>& items) {
  items.clear();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  text = text.substr(1, text.size() - 2);
  if (text.empty()) return true;
  while (true) {
    std::size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') {
      item = item.substr(1, item.size() - 2);
    }
    items.push_back(item);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::optional<FieldKey> find_key(std::string_view name) {
  std::uint8_t k = kKeyTable.slot[hash_name(name, kKeyTable.seed)];
  if (k == kEmpty) return std::nullopt;
  if (!same_short_text(kFieldKeyNames[k], name)) return std::nullopt;
  return static_cast<FieldKey>(k);
}

std::vector<std::int64_t>& FieldBag::int_list(FieldKey key) {
  auto& list = int_lists_[static_cast<std::size_t>(key)];
  list.clear();
  return list;
}

std::vector<std::string>& FieldBag::str_list(FieldKey key) {
  auto& list = str_lists_[static_cast<std::size_t>(key)];
  list.clear();
  return list;
}

std::string_view FieldBag::own(std::string text) { return owned_.emplace_back(std::move(text)); }

void FieldBag::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

void FieldBag::require(FieldKey key) {
  if (!has(key)) fail("missing field " + std::string(key_name(key)));
}

namespace {
std::string wrong_type(FieldKey key, const char* expected, Slot::Kind got) {
  return "field " + std::string(key_name(key)) + ": expected " + expected + ", got " +
         kind_name(got);
}
}  // namespace

void FieldBag::read_converted(FieldKey key, std::int64_t& out) {
  const Slot& slot = at(key);
  switch (slot.kind) {
    case Slot::Kind::kAbsent:
      return;
    case Slot::Kind::kInt:
      out = slot.i;
      return;
    case Slot::Kind::kReal:
      // 3.0 is an integer written by a float formatter; 3.5 is not. The range test comes
      // first: casting a double beyond int64 is undefined.
      if (std::abs(slot.d) < 9.0e15 &&
          slot.d == static_cast<double>(static_cast<std::int64_t>(slot.d))) {
        out = static_cast<std::int64_t>(slot.d);
        return;
      }
      break;
    case Slot::Kind::kText:
      if (auto v = parse_integer(slot.s)) {
        out = *v;
        return;
      }
      fail("field " + std::string(key_name(key)) + ": expected an integer, got '" +
           std::string(slot.s.substr(0, 40)) + "'");
      return;
    default:
      break;
  }
  fail(wrong_type(key, "an integer", slot.kind));
}

void FieldBag::read_converted(FieldKey key, int& out) {
  std::int64_t wide = out;
  read(key, wide);
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    fail("field " + std::string(key_name(key)) + ": " + std::to_string(wide) + " is out of range");
    return;
  }
  out = static_cast<int>(wide);
}

void FieldBag::read_converted(FieldKey key, double& out) {
  const Slot& slot = at(key);
  switch (slot.kind) {
    case Slot::Kind::kAbsent:
      return;
    case Slot::Kind::kInt:
      out = static_cast<double>(slot.i);
      return;
    case Slot::Kind::kReal:
      out = slot.d;
      return;
    case Slot::Kind::kString:
    case Slot::Kind::kText:
      // The contract allows non-finite values as strings ("nan", "-inf").
      if (auto v = parse_real(slot.s)) {
        out = *v;
        return;
      }
      fail("field " + std::string(key_name(key)) + ": expected a number, got '" +
           std::string(slot.s.substr(0, 40)) + "'");
      return;
    default:
      break;
  }
  fail(wrong_type(key, "a number", slot.kind));
}

void FieldBag::read(FieldKey key, std::optional<double>& out) {
  if (!has(key)) return;
  double value = 0;
  std::size_t errors_before = error_.size();
  read(key, value);
  if (error_.size() == errors_before) out = value;
}

void FieldBag::read(FieldKey key, std::optional<std::int64_t>& out) {
  if (!has(key)) return;
  std::int64_t value = 0;
  std::size_t errors_before = error_.size();
  read(key, value);
  if (error_.size() == errors_before) out = value;
}

void FieldBag::read(FieldKey key, std::string& out) {
  const Slot& slot = at(key);
  if (slot.kind == Slot::Kind::kAbsent) return;
  if (slot.kind == Slot::Kind::kString || slot.kind == Slot::Kind::kText) {
    out.assign(slot.s);
    return;
  }
  fail(wrong_type(key, "a string", slot.kind));
}

void FieldBag::read(FieldKey key, bool& out) {
  const Slot& slot = at(key);
  if (slot.kind == Slot::Kind::kAbsent) return;
  if (slot.kind == Slot::Kind::kBool) {
    out = slot.i != 0;
    return;
  }
  if (slot.kind == Slot::Kind::kText || slot.kind == Slot::Kind::kInt) {
    const std::string_view t = slot.s;
    if (slot.kind == Slot::Kind::kInt ? slot.i == 1 : t == "true" || t == "1") {
      out = true;
      return;
    }
    if (slot.kind == Slot::Kind::kInt ? slot.i == 0 : t == "false" || t == "0") {
      out = false;
      return;
    }
  }
  fail(wrong_type(key, "true or false", slot.kind));
}

void FieldBag::read_converted(FieldKey key, char& /*out*/) {
  fail(wrong_type(key, "a one-letter string", at(key).kind));
}

void FieldBag::read(FieldKey key, std::vector<std::int64_t>& out) {
  const Slot& slot = at(key);
  if (slot.kind == Slot::Kind::kAbsent) return;
  if (slot.kind == Slot::Kind::kIntList) {
    out = int_lists_[static_cast<std::size_t>(key)];
    return;
  }
  std::vector<std::string_view> items;
  if (slot.kind == Slot::Kind::kText && split_list(slot.s, items)) {
    std::vector<std::int64_t> values;
    for (std::string_view item : items) {
      auto v = parse_integer(item);
      if (!v) {
        fail("field " + std::string(key_name(key)) + ": '" + std::string(item.substr(0, 40)) +
             "' is not an integer");
        return;
      }
      values.push_back(*v);
    }
    out = std::move(values);
    return;
  }
  fail(wrong_type(key, "a list of integers", slot.kind));
}

void FieldBag::read(FieldKey key, std::vector<std::string>& out) {
  const Slot& slot = at(key);
  if (slot.kind == Slot::Kind::kAbsent) return;
  if (slot.kind == Slot::Kind::kStrList) {
    out = str_lists_[static_cast<std::size_t>(key)];
    return;
  }
  if (slot.kind == Slot::Kind::kIntList && int_lists_[static_cast<std::size_t>(key)].empty()) {
    out.clear();  // `[]` reads as either list type
    return;
  }
  std::vector<std::string_view> items;
  if (slot.kind == Slot::Kind::kText && split_list(slot.s, items)) {
    out.assign(items.begin(), items.end());
    return;
  }
  fail(wrong_type(key, "a list of strings", slot.kind));
}

}  // namespace bigmac::logs
