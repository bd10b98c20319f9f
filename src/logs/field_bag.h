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
  kCount
};

/// The contract key spelled `name`, if it is one. Hashed: this runs for every field of every
/// line.
std::optional<Key> find_key(std::string_view name);
std::string_view key_name(Key key);

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
  void clear();
  Slot& set(Key key);
  const Slot& at(Key key) const { return slots_[static_cast<std::size_t>(key)]; }
  bool has(Key key) const { return at(key).kind != Slot::Kind::kAbsent; }
  std::vector<std::int64_t>& int_list(Key key);  ///< storage for a kIntList slot
  std::vector<std::string>& str_list(Key key);   ///< storage for a kStrList slot
  std::string_view own(std::string text);        ///< keeps unescaped text alive for a slot

  // Readers: leave `out` alone when the field is absent; on a wrong type they leave it alone
  // and record the first error, e.g. "field loss: expected a number, got a list".
  void read(Key key, std::int64_t& out);
  void read(Key key, int& out);
  void read(Key key, double& out);
  void read(Key key, std::string& out);
  void read(Key key, char& out);  ///< a one-letter string
  void read(Key key, std::optional<double>& out);
  void read(Key key, std::optional<std::int64_t>& out);
  void read(Key key, std::vector<std::int64_t>& out);
  void read(Key key, std::vector<std::string>& out);
  void require(Key key);  ///< records "missing field X" when absent

  const std::string& error() const { return error_; }
  void fail(std::string message);

 private:
  std::array<Slot, static_cast<std::size_t>(Key::kCount)> slots_{};
  std::array<std::vector<std::int64_t>, static_cast<std::size_t>(Key::kCount)> int_lists_;
  std::array<std::vector<std::string>, static_cast<std::size_t>(Key::kCount)> str_lists_;
  std::array<Key, static_cast<std::size_t>(Key::kCount)> touched_{};
  std::size_t touched_count_ = 0;
  std::deque<std::string> owned_;
  std::string error_;
};

}  // namespace bigmac::logs
