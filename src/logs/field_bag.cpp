#include "logs/field_bag.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

constexpr std::array<std::string_view, static_cast<std::size_t>(Key::kCount)> kKeyNames{
    "ev",
    "rank",
    "t",
    "world_size",
    "local_rank",
    "device",
    "backend",
    "dtype",
    "seed",
    "torch_version",
    "pid",
    "tool_version",
    "init_ms",
    "micro_batch_size",
    "grad_accum",
    "dp",
    "samples_per_step",
    "seq_length",
    "input_shape",
    "input_dtype",
    "param_count",
    "param_digest",
    "stage",
    "num_stages",
    "first_layer",
    "last_layer",
    "dp_rank",
    "dp_size",
    "tied",
    "tied_duplicate_count",
    "global_step",
    "loss",
    "grad_norm",
    "lr",
    "step_ms",
    "mb",
    "phase",
    "start",
    "end",
    "where",
    "name",
    "shape",
    "value",
    "step",
    "path",
    "steps",
    "loss_count"};

constexpr std::size_t kTableSize = 256;
constexpr std::uint8_t kEmpty = 0xff;

std::uint32_t hash_name(std::string_view name, std::uint32_t seed) {
  std::uint32_t h = seed;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;  // FNV-1a
  return (h ^ (h >> 15)) % kTableSize;
}

// A perfect hash: the first seed under which every key has its own slot, so a lookup is one
// probe and one compare.
struct KeyTable {
  std::array<std::uint8_t, kTableSize> slot{};
  std::uint32_t seed = 2166136261u;
  KeyTable() {
    for (;; ++seed) {
      slot.fill(kEmpty);
      bool clash = false;
      for (std::size_t k = 0; k < kKeyNames.size() && !clash; ++k) {
        std::uint32_t h = hash_name(kKeyNames[k], seed);
        clash = slot[h] != kEmpty;
        slot[h] = static_cast<std::uint8_t>(k);
      }
      if (!clash) return;
    }
  }
};

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
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') {
      item = item.substr(1, item.size() - 2);
    }
    items.push_back(item);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::optional<Key> find_key(std::string_view name) {
  static const KeyTable table;
  std::uint8_t k = table.slot[hash_name(name, table.seed)];
  if (k == kEmpty) return std::nullopt;
  if (!same_short_text(kKeyNames[k], name)) return std::nullopt;
  return static_cast<Key>(k);
}

std::string_view key_name(Key key) { return kKeyNames[static_cast<std::size_t>(key)]; }

std::optional<Key> KeyGuess::find(std::size_t previous, std::string_view name) {
  Key guess = next_[previous];
  if (same_short_text(kKeyNames[static_cast<std::size_t>(guess)], name)) return guess;
  std::optional<Key> key = find_key(name);
  if (key) next_[previous] = *key;
  return key;
}

std::vector<std::int64_t>& FieldBag::int_list(Key key) {
  auto& list = int_lists_[static_cast<std::size_t>(key)];
  list.clear();
  return list;
}

std::vector<std::string>& FieldBag::str_list(Key key) {
  auto& list = str_lists_[static_cast<std::size_t>(key)];
  list.clear();
  return list;
}

std::string_view FieldBag::own(std::string text) { return owned_.emplace_back(std::move(text)); }

void FieldBag::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

void FieldBag::require(Key key) {
  if (!has(key)) fail("missing field " + std::string(key_name(key)));
}

namespace {
std::string wrong_type(Key key, const char* expected, Slot::Kind got) {
  return "field " + std::string(key_name(key)) + ": expected " + expected + ", got " +
         kind_name(got);
}
}  // namespace

void FieldBag::read_converted(Key key, std::int64_t& out) {
  const Slot& slot = at(key);
  switch (slot.kind) {
    case Slot::Kind::kAbsent:
      return;
    case Slot::Kind::kInt:
      out = slot.i;
      return;
    case Slot::Kind::kReal:
      // 3.0 is an integer written by a float formatter; 3.5 is not.
      if (slot.d == static_cast<double>(static_cast<std::int64_t>(slot.d)) &&
          std::abs(slot.d) < 9.0e15) {
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

void FieldBag::read_converted(Key key, int& out) {
  std::int64_t wide = out;
  read(key, wide);
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    fail("field " + std::string(key_name(key)) + ": " + std::to_string(wide) + " is out of range");
    return;
  }
  out = static_cast<int>(wide);
}

void FieldBag::read_converted(Key key, double& out) {
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

void FieldBag::read(Key key, std::optional<double>& out) {
  if (!has(key)) return;
  double value = 0;
  std::size_t errors_before = error_.size();
  read(key, value);
  if (error_.size() == errors_before) out = value;
}

void FieldBag::read(Key key, std::optional<std::int64_t>& out) {
  if (!has(key)) return;
  std::int64_t value = 0;
  std::size_t errors_before = error_.size();
  read(key, value);
  if (error_.size() == errors_before) out = value;
}

void FieldBag::read(Key key, std::string& out) {
  const Slot& slot = at(key);
  if (slot.kind == Slot::Kind::kAbsent) return;
  if (slot.kind == Slot::Kind::kString || slot.kind == Slot::Kind::kText) {
    out.assign(slot.s);
    return;
  }
  fail(wrong_type(key, "a string", slot.kind));
}

void FieldBag::read_converted(Key key, char& /*out*/) {
  fail(wrong_type(key, "a one-letter string", at(key).kind));
}

void FieldBag::read(Key key, std::vector<std::int64_t>& out) {
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

void FieldBag::read(Key key, std::vector<std::string>& out) {
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
