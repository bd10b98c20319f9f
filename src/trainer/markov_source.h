#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace bigmac::trainer {

/// Seeded synthetic token sequences a small model can learn quickly: a fixed random Markov chain
/// in which every token has three successors with probabilities 0.75 / 0.2 / 0.05 (about
/// 0.69 nats per token against ln(vocab) for guessing). Sample i is a pure function of
/// (seed, i), so any layout that reads the same sample numbers sees the same tokens.
class MarkovSource {
 public:
  static constexpr std::array<double, 3> kProbabilities = {0.75, 0.2, 0.05};

  /// `vocab` >= 4, `seq_length` >= 1.
  MarkovSource(int vocab, int seq_length, std::uint64_t seed);

  int vocab() const { return vocab_; }
  int seq_length() const { return seq_length_; }
  /// Tokens per sample: seq_length + 1 (inputs are [0, T), labels are [1, T]).
  int sample_tokens() const { return seq_length_ + 1; }

  /// Writes sample `index` into `out` (sample_tokens() entries).
  void sample(std::uint64_t index, std::span<std::int64_t> out) const;

  /// Samples [first, first + count) back to back, count × sample_tokens() tokens.
  std::vector<std::int64_t> samples(std::uint64_t first, int count) const;

  /// The three successors of `token`, most likely first.
  const std::array<int, 3>& successors(int token) const { return successors_[token]; }

  /// Entropy of the chain's next-token distribution in nats: the loss floor a perfect model
  /// reaches.
  static double entropy_nats();

 private:
  int vocab_;
  int seq_length_;
  std::uint64_t seed_;
  std::vector<std::array<int, 3>> successors_;
};

/// SplitMix64: a small, well-mixed and portable generator step (also used by the Python mirror
/// in bench/trainer).
std::uint64_t splitmix64(std::uint64_t& state);

}  // namespace bigmac::trainer
