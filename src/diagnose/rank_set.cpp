#include "diagnose/rank_set.h"

#include <fmt/format.h>

#include <bit>

namespace bigmac::diagnose {

void RankSet::add(int rank) {
  if (rank < 0 || rank >= kMaxRank) return;
  const auto word = static_cast<std::size_t>(rank) / 64;
  const std::uint64_t bit = std::uint64_t{1} << (static_cast<unsigned>(rank) % 64);
  if (word >= words_.size()) words_.resize(word + 1, 0);
  if ((words_[word] & bit) == 0) {
    words_[word] |= bit;
    ++count_;
  }
}

bool RankSet::contains(int rank) const {
  if (rank < 0 || rank >= kMaxRank) return false;
  const auto word = static_cast<std::size_t>(rank) / 64;
  return word < words_.size() &&
         (words_[word] >> (static_cast<unsigned>(rank) % 64) & std::uint64_t{1}) != 0;
}

std::vector<int> RankSet::values() const {
  std::vector<int> out;
  out.reserve(count_);
  for (std::size_t w = 0; w < words_.size(); ++w) {
    std::uint64_t bits = words_[w];
    while (bits != 0) {
      const int bit = std::countr_zero(bits);
      out.push_back(static_cast<int>(w * 64) + bit);
      bits &= bits - 1;
    }
  }
  return out;
}

std::string RankSet::ranges(std::size_t max_ranges) const {
  return format_ranges(values(), max_ranges);
}

std::string format_ranges(const std::vector<int>& values, std::size_t max_ranges) {
  std::string out;
  std::size_t shown = 0;
  std::size_t remaining = values.size();
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (shown == max_ranges) {
      out += fmt::format(",... ({} more)", remaining);
      break;
    }
    if (!out.empty()) out += ',';
    out += i == j ? fmt::format("{}", values[i]) : fmt::format("{}-{}", values[i], values[j]);
    ++shown;
    remaining -= j - i + 1;
    i = j + 1;
  }
  return out;
}

}  // namespace bigmac::diagnose
