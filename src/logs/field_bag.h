#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::logs {

/// The field names of the log contract (docs/log-contract.md). Unknown names are ignored.
enum class Key : std::uint8_t {
  kEv,
  kRank,
  kT,
  kWorldSize,
  kLocalRank,
  kDevice,
  kBackend,
  kDtype,
  kSeed,
  kTorchVersion,
  kPid,
  kToolVersion,
  kInitMs,
  kMicroBatchSize,
  kGradAccum,
  kDp,
  kSamplesPerStep,
  kSeqLength,
  kInputShape,
  kInputDtype,
  kParamCount,
  kParamDigest,
  kStage,
  kNumStages,
  kFirstLayer,
  kLastLayer,
  kDpRank,
  kDpSize,
  kTied,
  kTiedDuplicateCount,
  kGlobalStep,
  kLoss,
  kGradNorm,
  kLr,
  kStepMs,
  kMb,
  kPhase,
  kStart,
  kEnd,
  kWhere,
  kName,
  kShape,
  kValue,
  kStep,
  kPath,
  kSteps,
  kLossCount,
  kCount
};

/// Equality of short texts (keys, event names) as an inline loop, which beats a call to memcmp
/// on a hot path for a few letters.
inline bool same_short_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// The contract key spelled `name`, if it is one. Hashed: this runs for every field of every
/// line.
std::optional<Key> find_key(std::string_view name);
std::string_view key_name(Key key);

/// find_key for a stream of lines: writers print an event's fields in a fixed order, so the key
/// after key K is most likely the one that followed K last time. Checking that guess first skips
/// the scan and the hash on most fields.
class KeyGuess {
 public:
  static constexpr std::size_t kStart = static_cast<std::size_t>(Key::kCount);  ///< no key yet
  KeyGuess() { next_.fill(Key::kEv); }
  /// `previous` is the last key found on this line (as std::size_t), or kStart.
  std::optional<Key> find(std::size_t previous, std::string_view name);
  /// The key expected after `previous`, for readers that compare it in their own way.
  Key predicted(std::size_t previous) const { return next_[previous]; }

 private:
  std::array<Key, kStart + 1> next_;
};

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
  Slot& set(Key key) {
    auto k = static_cast<std::size_t>(key);
    stamps_[k] = generation_;
    slots_[k].kind = Slot::Kind::kOther;
    return slots_[k];
  }
  const Slot& at(Key key) const {
    auto k = static_cast<std::size_t>(key);
    return stamps_[k] == generation_ ? slots_[k] : kAbsentSlot;
  }
  bool has(Key key) const { return at(key).kind != Slot::Kind::kAbsent; }
  std::vector<std::int64_t>& int_list(Key key);  ///< storage for a kIntList slot
  std::vector<std::string>& str_list(Key key);   ///< storage for a kStrList slot
  std::string_view own(std::string text);        ///< keeps unescaped text alive for a slot

  // Readers: leave `out` alone when the field is absent; on a wrong type they leave it alone
  // and record the first error, e.g. "field loss: expected a number, got a list".
  // The usual case of the number readers is inline (every field of every line passes here);
  // conversions and errors are out of line.
  void read(Key key, std::int64_t& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kInt) {
      out = slot.i;
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(Key key, int& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kInt && slot.i == static_cast<int>(slot.i)) {
      out = static_cast<int>(slot.i);
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(Key key, double& out) {
    const Slot& slot = at(key);
    if (slot.kind == Slot::Kind::kReal) {
      out = slot.d;
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(Key key, std::string& out);
  void read(Key key, char& out) {  ///< a one-letter string
    const Slot& slot = at(key);
    if ((slot.kind == Slot::Kind::kString || slot.kind == Slot::Kind::kText) &&
        slot.s.size() == 1) {
      out = slot.s.front();
    } else if (slot.kind != Slot::Kind::kAbsent) {
      read_converted(key, out);
    }
  }
  void read(Key key, std::optional<double>& out);
  void read(Key key, std::optional<std::int64_t>& out);
  void read(Key key, std::vector<std::int64_t>& out);
  void read(Key key, std::vector<std::string>& out);
  void require(Key key);  ///< records "missing field X" when absent

  const std::string& error() const { return error_; }
  void fail(std::string message);

 private:
  void read_converted(Key key, std::int64_t& out);
  void read_converted(Key key, int& out);
  void read_converted(Key key, double& out);
  void read_converted(Key key, char& out);  ///< only fails: not a one-letter string

  std::array<Slot, static_cast<std::size_t>(Key::kCount)> slots_{};
  std::array<std::vector<std::int64_t>, static_cast<std::size_t>(Key::kCount)> int_lists_;
  std::array<std::vector<std::string>, static_cast<std::size_t>(Key::kCount)> str_lists_;
  // A slot holds a field of the current line only when its stamp is the current generation:
  // clear() is one increment however many fields the line had.
  std::array<std::uint64_t, static_cast<std::size_t>(Key::kCount)> stamps_{};
  std::uint64_t generation_ = 1;
  static constexpr Slot kAbsentSlot{};
  std::deque<std::string> owned_;
  std::string error_;
};

}  // namespace bigmac::logs
