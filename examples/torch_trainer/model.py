"""A small decoder-only transformer, and the pipeline stage that holds a slice of it.

Every rank builds the whole model from the seed and then keeps only its stage's modules, so
the initial parameters (and their digest) are the same in every layout without a broadcast.
Blocks sit in a ModuleDict keyed by their layer number, so a parameter has the same name in a
stage as in the whole model ("blocks.2.qkv.weight").
"""
import hashlib
import math

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


class DecoderLM(nn.Module):
    """Token + position embedding, N blocks, final norm, LM head (optionally the embedding's)."""

    def __init__(self, m, seq_length, seed):
        super().__init__()
        self.embed = nn.Embedding(m.vocab, m.hidden)
        self.pos = nn.Parameter(torch.zeros(seq_length, m.hidden))
        self.blocks = nn.ModuleDict(
            {str(i): Block(m.hidden, m.heads, m.ffn_mult) for i in range(m.num_layers)})
        self.norm = nn.LayerNorm(m.hidden)
        self.head = nn.Linear(m.hidden, m.vocab, bias=False)
        if m.tie_embeddings:
            self.head.weight = self.embed.weight
        # GPT-2 style init from our own generator: independent of torch's global RNG and of
        # the order modules were built in.
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias") or ".ln" in name or name.startswith("norm."):
                    p.fill_(1.0 if name.endswith("weight") else 0.0)
                else:
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
    """Layers [first, end) of a DecoderLM, plus the embedding on the first stage and the final
    norm and head on the last. A single-process run is one stage holding everything."""

    def __init__(self, full, first, end, is_first, is_last, tied):
        super().__init__()
        self.is_first, self.is_last = is_first, is_last
        self.layer_ids = [i for i in range(first, end) if str(i) in full.blocks]
        self.embed = full.embed if is_first else None
        if is_first:
            self.pos = full.pos
        else:
            self.register_parameter("pos", None)
        self.blocks = nn.ModuleDict({str(i): full.blocks[str(i)] for i in self.layer_ids})
        self.norm = full.norm if is_last else None
        self.head = None
        # Names of parameters another stage also holds (the tied embedding/head copy).
        self.tied_names = []
        self.tied_copy = None
        if is_last:
            if tied and not is_first:
                # The last stage holds its own copy of the embedding as the head weight; the
                # trainer sums the two gradients every step so the copies stay equal.
                self.head = nn.Linear(full.head.in_features, full.head.out_features, bias=False)
                self.head.weight = nn.Parameter(full.embed.weight.detach().clone())
                self.tied_copy = self.head.weight
                self.tied_names = ["embed.weight"]
            else:
                self.head = full.head
        if is_first and tied and not is_last:
            self.tied_names = ["embed.weight"]
        self.tracer = None  # called as tracer(where, name, tensor) when shape tracing is on

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
