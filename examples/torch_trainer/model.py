"""A small decoder-only transformer, and the pipeline stage that holds a slice of it.

Each stage builds only its own modules, and every parameter is initialised from (seed, its
name), so the initial parameters are the same in every layout without a broadcast. Blocks sit
in a ModuleDict keyed by their layer number, so a parameter has the same name in a stage as in
the whole model ("blocks.2.qkv.weight").
"""
import hashlib
import math
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-norm block: causal self-attention, then a GELU feed-forward, each residual."""

    def __init__(self, hidden, heads, ffn_mult):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"model.hidden {hidden} is not divisible by model.heads {heads}")
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn_mult * hidden)
        self.fc2 = nn.Linear(ffn_mult * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)
        # Built per call rather than kept as a bool buffer: DDP broadcasts buffers at start-up
        # and Gloo cannot broadcast bool tensors ("Invalid scalar type").
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def init_parameters(module, seed, names=None):
    """GPT-2 style init where each parameter's values depend only on (seed, its name): a stage
    that builds just its own layers gets the same numbers as the whole model has there.
    `names` maps a parameter to the name whose values it takes (a tied head copy)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            name = (names or {}).get(name, name)
            if name.endswith("bias") or ".ln" in name or name.startswith("norm."):
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            else:
                gen = torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % 2**63)
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


def param_count(module):
    return sum(p.numel() for p in module.parameters())


def param_digest(module):
    """First 16 hex digits of SHA-256 over every parameter's name, shape and float32 bytes."""
    sha = hashlib.sha256()
    for name, p in module.named_parameters():
        sha.update(f"{name}{list(p.shape)}".encode())
        sha.update(p.detach().to(torch.float32).contiguous().numpy().tobytes())
    return sha.hexdigest()[:16]


class Stage(nn.Module):
    """Layers [first, end) of the model, plus the embedding on the first stage and the final
    norm and LM head on the last. The whole model is the one stage that holds everything.

    Like most hand-written pipelines, a stage builds the blocks of its range and nothing checks
    that range against num_layers: a split point past the end makes a stage build layers the
    model does not have and leaves the next stage with none.
    """

    def __init__(self, m, seq_length, seed, first, end, is_first, is_last):
        super().__init__()
        self.is_first, self.is_last = is_first, is_last
        self.layer_ids = list(range(first, end))
        if is_first:
            self.embed = nn.Embedding(m.vocab, m.hidden)
            self.pos = nn.Parameter(torch.zeros(seq_length, m.hidden))
        else:
            self.embed = None
            self.register_parameter("pos", None)
        self.blocks = nn.ModuleDict({str(i): Block(m.hidden, m.heads, m.ffn_mult) for i in self.layer_ids})
        self.norm = nn.LayerNorm(m.hidden) if is_last else None
        self.head = nn.Linear(m.hidden, m.vocab, bias=False) if is_last else None
        # Names of parameters another stage also holds (the tied embedding/head copy).
        self.tied_names = []
        self.holds_tied_copy = False
        names = {}
        if m.tie_embeddings and is_last and is_first:
            self.head.weight = self.embed.weight
        elif m.tie_embeddings and is_last:
            # The last stage holds its own copy of the embedding as the head weight, starting
            # from the same values; the trainer sums the two gradients every step so the copies
            # stay equal.
            self.holds_tied_copy = True
            self.tied_names = ["embed.weight"]
            names["head.weight"] = "embed.weight"
        elif m.tie_embeddings and is_first:
            self.tied_names = ["embed.weight"]
        init_parameters(self, seed, names)
        self.tracer = None  # called as tracer(where, name, tensor) when shape tracing is on

    @property
    def tied_copy(self):
        """The head weight that copies the first stage's embedding, or None. (A property: a
        Parameter assigned as an attribute would be registered under a second name.)"""
        return self.head.weight if self.holds_tied_copy else None

    def _trace(self, where, tensor):
        if self.tracer is not None:
            self.tracer(where, "hidden_states", tensor)

    def forward(self, x):
        """Tokens (first stage) or hidden states in; hidden states or logits (last stage) out."""
        if self.is_first:
            x = self.embed(x) + self.pos[: x.shape[1]]
        self._trace("enter", x)
        for i in self.layer_ids:
            x = self.blocks[str(i)](x)
        self._trace("exit", x)
        if self.is_last:
            x = self.head(self.norm(x))
        return x


def whole_model(m, seq_length, seed):
    return Stage(m, seq_length, seed, 0, m.num_layers, True, True)
