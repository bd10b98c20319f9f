#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bigmac::diagnose {

/// The ranks that showed one failure, however many: a bitmap, so hundreds of thousands of
/// repeated lines cost a bit each. Printed as ranges (`0-63,65`).
class RankSet {
 public:
  /// Ranks at or above this are not recorded (no launcher starts that many processes).
  static constexpr int kMaxRank = 1 << 22;

  void add(int rank);
  bool contains(int rank) const;
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }

  /// Ascending.
  std::vector<int> values() const;

  /// `0-63,65,70-71`; at most `max_ranges` ranges, then `,... (N more)`.
  std::string ranges(std::size_t max_ranges = 16) const;

 private:
  std::vector<std::uint64_t> words_;
  std::size_t count_ = 0;
};

/// `values` (ascending, distinct) as ranges, like RankSet::ranges.
std::string format_ranges(const std::vector<int>& values, std::size_t max_ranges = 16);

}  // namespace bigmac::diagnose
