#include "trainer/markov_source.h"

#include <cmath>
#include <stdexcept>

namespace bigmac::trainer {
namespace {

constexpr std::uint64_t kChainSalt = 0x6d61726b6f76ULL;  // "markov": chain differs from samples

double unit_interval(std::uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

int below(std::uint64_t& state, int bound) {
  return static_cast<int>(splitmix64(state) % static_cast<std::uint64_t>(bound));
}

}  // namespace

std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

MarkovSource::MarkovSource(int vocab, int seq_length, std::uint64_t seed)
    : vocab_(vocab), seq_length_(seq_length), seed_(seed) {
  if (vocab < 4 || seq_length < 1) {
    throw std::invalid_argument("MarkovSource needs vocab >= 4 and seq_length >= 1");
  }
  std::uint64_t state = seed ^ kChainSalt;
  successors_.resize(static_cast<std::size_t>(vocab));
  for (auto& next : successors_) {
    // Three distinct successors, so every choice is learnable as its own class.
    next[0] = below(state, vocab);
    do next[1] = below(state, vocab);
    while (next[1] == next[0]);
    do next[2] = below(state, vocab);
    while (next[2] == next[0] || next[2] == next[1]);
  }
}

void MarkovSource::sample(std::uint64_t index, std::span<std::int64_t> out) const {
  if (out.size() != static_cast<std::size_t>(sample_tokens())) {
    throw std::invalid_argument("MarkovSource::sample: output has the wrong length");
  }
  std::uint64_t mix = seed_;
  std::uint64_t state = splitmix64(mix) ^ (index * 0xd1b54a32d192ed03ULL);
  int token = below(state, vocab_);
  out[0] = token;
  for (std::size_t i = 1; i < out.size(); ++i) {
    double u = unit_interval(state);
    const auto& next = successors_[static_cast<std::size_t>(token)];
    token = u < kProbabilities[0]                       ? next[0]
            : u < kProbabilities[0] + kProbabilities[1] ? next[1]
                                                        : next[2];
    out[i] = token;
  }
}

std::vector<std::int64_t> MarkovSource::samples(std::uint64_t first, int count) const {
  const auto width = static_cast<std::size_t>(sample_tokens());
  std::vector<std::int64_t> tokens(width * static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    sample(first + static_cast<std::uint64_t>(i),
           std::span<std::int64_t>(tokens).subspan(static_cast<std::size_t>(i) * width, width));
  }
  return tokens;
}

double MarkovSource::entropy_nats() {
  double h = 0;
  for (double p : kProbabilities) h -= p * std::log(p);
  return h;
}

}  // namespace bigmac::trainer
