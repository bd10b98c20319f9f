"""The BigMac model, Markov data and training step of bigmac-train, written in plain PyTorch.

A line-by-line mirror of src/trainer (bigmac_model.cpp, markov_source.cpp, trainer.cpp): same
architecture, parameter names and registration order, the same seeded initialisation and the same
synthetic samples, so with equal settings it reproduces bigmac-train's losses. bench/trainer/
compare.py times the two against each other. Needs torch (Debian python3-torch: /usr/bin/python3).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK64 = (1 << 64) - 1
PROBABILITIES = (0.75, 0.2, 0.05)
CHAIN_SALT = 0x6D61726B6F76


class SplitMix64:
    def __init__(self, state):
        self.state = state & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, bound):
        return self.next() % bound

    def unit(self):
        return (self.next() >> 11) * 2.0**-53


class MarkovSource:
    """Sample i is a pure function of (seed, i), as in markov_source.cpp."""

    def __init__(self, vocab, seq_length, seed):
        self.vocab, self.seq_length, self.seed = vocab, seq_length, seed & MASK64
        rng = SplitMix64(self.seed ^ CHAIN_SALT)
        self.successors = []
        for _ in range(vocab):
            a = rng.below(vocab)
            b = rng.below(vocab)
            while b == a:
                b = rng.below(vocab)
            c = rng.below(vocab)
            while c in (a, b):
                c = rng.below(vocab)
            self.successors.append((a, b, c))

    def sample(self, index):
        mix = SplitMix64(self.seed)
        rng = SplitMix64(mix.next() ^ ((index * 0xD1B54A32D192ED03) & MASK64))
        token = rng.below(self.vocab)
        out = [token]
        for _ in range(self.seq_length):
            u = rng.unit()
            nxt = self.successors[token]
            token = nxt[0] if u < PROBABILITIES[0] else (
                nxt[1] if u < PROBABILITIES[0] + PROBABILITIES[1] else nxt[2])
            out.append(token)
        return out

    def samples(self, first, count):
        return torch.tensor([self.sample(first + i) for i in range(count)], dtype=torch.int64)


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn_mult, layer_id):
        super().__init__()
        self.layer_id, self.heads = layer_id, heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, hidden * ffn_mult)
        self.fc_out = nn.Linear(hidden * ffn_mult, hidden)

    def forward(self, x):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        qkv = self.qkv(self.ln1(x)).view(batch, seq, 3, self.heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
        future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        attended = torch.matmul(torch.softmax(scores, -1), v)
        attended = attended.transpose(1, 2).reshape(batch, seq, hidden)
        y = x + self.attn_out(attended)
        return y + self.fc_out(F.gelu(self.fc(self.ln2(y))))


class BigMac(nn.Module):
    def __init__(self, num_layers, hidden, heads, vocab, ffn_mult, seq_length, tie_embeddings):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, hidden)
        self.position_embedding = nn.Embedding(seq_length, hidden)
        self.blocks = nn.ModuleList(
            [Block(hidden, heads, ffn_mult, i) for i in range(num_layers)])
        self.final_norm = nn.LayerNorm(hidden)
        self.lm_head = None if tie_embeddings else nn.Linear(hidden, vocab, bias=False)

    def initialize(self, seed):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in self.named_parameters():
                if param.dim() >= 2:
                    param.normal_(0.0, 0.02, generator=generator)
                elif name.endswith("bias"):
                    param.zero_()
                else:
                    param.fill_(1.0)

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1))
        hidden = self.token_embedding(tokens) + self.position_embedding(positions)
        for block in self.blocks:
            hidden = block(hidden)
        normed = self.final_norm(hidden)
        if self.lm_head is not None:
            return self.lm_head(normed)
        return torch.matmul(normed, self.token_embedding.weight.t())


def clip_grad_norm(params, max_norm):
    norms = [p.grad.norm() for p in params if p.grad is not None]
    total = torch.stack(norms).norm()
    coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(coefficient)
    return total.item()


def train(settings, on_step):
    """Single-process training with bigmac-train's defaults; calls on_step(step, loss, norm, lr)."""
    s = settings
    model = BigMac(s["num_layers"], s["hidden"], s["heads"], s["vocab"], s["ffn_mult"],
                   s["seq_length"], s["tie_embeddings"])
    model.initialize(s["seed"])
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=s["lr"], weight_decay=s["weight_decay"])
    data = MarkovSource(s["vocab"], s["seq_length"], s["seed"])
    micro, accum, seq = s["micro_batch_size"], s["grad_accum"], s["seq_length"]
    per_step = micro * accum
    for step in range(s["max_steps"]):
        lr = s["lr"] * min(1.0, (step + 1) / s["warmup_steps"]) if s["warmup_steps"] > 0 else s["lr"]
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        loss_sum = torch.zeros(1)
        for mb in range(accum):
            tokens = data.samples(step * per_step + mb * micro, micro)
            logits = model(tokens[:, :seq])
            flat = logits.reshape(-1, logits.size(-1))
            loss = F.nll_loss(torch.log_softmax(flat, -1), tokens[:, 1:].reshape(-1))
            (loss * (1.0 / accum)).backward()
            loss_sum += loss.detach() * (1.0 / accum)
        norm = clip_grad_norm(params, s["grad_clip"])
        optimizer.step()
        on_step(step, loss_sum.item(), norm, lr)
