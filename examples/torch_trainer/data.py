"""Seeded synthetic text a small model learns within a few steps.

A fixed random Markov chain: every token has three successors, taken with probability
0.75 / 0.2 / 0.05, so the loss can fall from ln(vocab) towards about 0.69 nats. Sample i is a
pure function of (seed, i): a layout that reads the same sample numbers sees the same tokens,
whatever rank reads them.
"""
import torch

_MASK = (1 << 64) - 1
_PROBS = (0.75, 0.2, 0.05)


def _splitmix64(state):
    """One SplitMix64 step: returns (new_state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


class MarkovText:
    def __init__(self, vocab, seq_length, seed):
        if vocab < 4:
            raise ValueError(f"model.vocab {vocab}: the synthetic data needs at least 4 tokens")
        self.vocab, self.seq_length, self.seed = vocab, seq_length, seed
        state = (seed ^ 0x6D61726B6F76) & _MASK
        self.successors = []
        for _ in range(vocab):
            picks = []
            while len(picks) < 3:
                state, r = _splitmix64(state)
                if r % vocab not in picks:
                    picks.append(r % vocab)
            self.successors.append(picks)

    def sample(self, index):
        """seq_length + 1 tokens: inputs are [0, T), labels [1, T]."""
        _, r = _splitmix64(self.seed & _MASK)
        state = r ^ ((index * 0xD1B54A32D192ED03) & _MASK)
        state, r = _splitmix64(state)
        token = r % self.vocab
        out = [token]
        for _ in range(self.seq_length):
            state, r = _splitmix64(state)
            u = (r >> 11) * 2.0**-53
            nxt = self.successors[token]
            token = nxt[0] if u < _PROBS[0] else nxt[1] if u < _PROBS[0] + _PROBS[1] else nxt[2]
            out.append(token)
        return out

    def batch(self, first, count):
        """Samples [first, first + count) as a [count, seq_length + 1] int64 tensor."""
        return torch.tensor([self.sample(first + i) for i in range(count)], dtype=torch.int64)
