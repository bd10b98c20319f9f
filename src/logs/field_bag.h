#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logs/contract_names.h"

namespace bigmac::logs {

/// Equality of short texts (keys, event names) as an inline loop, which beats a call to memcmp
/// on a hot path for a few letters.
inline bool same_short_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// The contract key spelled `name`, if it is one: one probe of a perfect hash and one compare,
/// since it runs for every field of a `BIGMAC ev=` line and of a JSON line that is not of its
/// event's remembered shape.
std::optional<FieldKey> find_key(std::string_view name);

/// One field's value as the line gave it: typed (JSON) or raw text (key=value).
struct Slot {
  enum class Kind : std::uint8_t {
    kAbsent,
    kInt,
    kReal,
    kString,
    kText,
    kIntList,
    kStrList,
    kBool,
    kOther
  };
  Kind kind = Kind::kAbsent;
  std::int64_t i = 0;
  double d = 0;
  std::string_view s;  ///< kString, kText: points into the line, the JSON parser or owned()
};

/// The fields of one contract line, filled by a JSON or key=value reader and read by the
/// record builder with type checks. Reused from line to line without reallocating.
class FieldBag {
 public:
  /// Forgets the line's fields (kept allocations stay for the next line).
  void clear() {
    ++generation_;
    if (!owned_.empty()) owned_.clear();
    if (!error_.empty()) error_.clear();
  }
  /// The slot for `key`, marked kOther until the reader says what it holds.
  Slot& set(FieldKey key) {
    auto k = static_cast<std::size_t>(key);
    stamps_[k] = generation_;
    slots_[k].kind = Slot::Kind::kOther;
    return slots_[k];
  }
  const Slot& at(FieldKey key) const {
    auto k = static_cast<std::size_t>(key);
    return stamps_[k] == generation_ ? slots_[k] : kAbsentSlot;
  }
  bool has(FieldKey key) const { return at(key).kind != Slot::Kind::kAbsent; }
  std::vector<std::int64_t>& int_list(FieldKey key);  ///< storage for a kIntList slot
  std::vector<std::string>& str_list(FieldKey key);   ///< storage for a kStrList slot
  std::string_view own(std::string text);             ///< keeps unescaped text alive for a slot

  // Readers: leave `out` alone when the field is absent; on a wrong type they leave it alone
  // and record the first error, e.g. "field loss: expected a number, got a list".
  // The usual case of the number readers is inline (every field of every line passes here);
  // conversions and errors are out of line.
  void read(FieldKey key, std::int64_t& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kInt) {
      out = slot.i;
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(FieldKey key, int& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kInt && slot.i == static_cast<int>(slot.i)) {
      out = static_cast<int>(slot.i);
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(FieldKey key, double& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kReal) {
      out = slot.d;
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(FieldKey key, std::string& out);
  void read(FieldKey key, bool& out);   ///< JSON true/false; `true`/`false`/`1`/`0` as text
  void read(FieldKey key, char& out) {  ///< a one-letter string
    const Slot& slot = at(key);
    if ((slot.kind == Slot::Kind::kString || slot.kind == Slot::Kind::kText) &&
        slot.s.size() == 1) {
      out = slot.s.front();
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(FieldKey key, std::optional<double>& out);
  void read(FieldKey key, std::optional<std::int64_t>& out);
  void read(FieldKey key, std::vector<std::int64_t>& out);
  void read(FieldKey key, std::vector<std::string>& out);
  void require(FieldKey key);  ///< records "missing field X" when absent

  const std::string& error() const { return error_; }
  void fail(std::string message);

 private:
  void read_converted(FieldKey key, std::int64_t& out);
  void read_converted(FieldKey key, int& out);
  void read_converted(FieldKey key, double& out);
  void read_converted(FieldKey key, char& out);  ///< only fails: not a one-letter string

  std::array<Slot, kFieldKeyCount> slots_{};
  std::array<std::vector<std::int64_t>, kFieldKeyCount> int_lists_;
  std::array<std::vector<std::string>, kFieldKeyCount> str_lists_;
  // A slot holds a field of the current line only when its stamp is the current generation:
  // clear() is one increment however many fields the line had.
  std::array<std::uint64_t, kFieldKeyCount> stamps_{};
  std::uint64_t generation_ = 1;
  static constexpr Slot kAbsentSlot{};
  std::deque<std::string> owned_;
  std::string error_;
};

}  // namespace bigmac::logs
