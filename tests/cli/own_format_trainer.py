#!/usr/bin/env python3
"""A trainer that prints its steps in a format of its own, for the run path's log adapters.

Linear regression trained by mini-batch SGD in pure Python (no torch, so that it starts at once):
sample i is drawn from (seed, i) alone, the weights from the seed. Each optimizer step it prints

    it 3 | loss 0.4127 | lr 2.0e-02 | gn 0.8123 | bsz 8

with a 1-based step counter, a line no built-in adapter reads: only a `[logs.fields]` map
(log_format = "regex") makes steps of it. What the gates need besides the steps (run, batch,
model, done) it writes as bigmac-log JSON lines (docs/log-contract.md), as the README advises
for a trainer that lacks them.

    own_format_trainer.py --seed S --max-steps N --micro-batch-size M --grad-accum A --lr LR
"""
import argparse
import hashlib
import json
import math
import os
import random
import struct
import sys
import time

DIM = 8


def event(ev, **fields):
    print(json.dumps({"ev": ev, "rank": 0, "t": time.time(), **fields}), flush=True)


def sample(seed, i, truth):
    rng = random.Random(seed * 1_000_003 + i)
    x = [rng.uniform(-1.0, 1.0) for _ in range(DIM)]
    y = sum(w * v for w, v in zip(truth, x)) + truth[-1] + rng.gauss(0.0, 0.05)
    return x, y


def digest(params):
    return hashlib.sha256(b"".join(struct.pack("<d", p) for p in params)).hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--max-steps", type=int, required=True)
    parser.add_argument("--micro-batch-size", type=int, required=True)
    parser.add_argument("--grad-accum", type=int, required=True)
    parser.add_argument("--lr", type=float, required=True)
    args = parser.parse_args()
    if args.max_steps < 1 or args.micro_batch_size < 1 or args.grad_accum < 1:
        sys.exit("own_format_trainer.py: --max-steps, --micro-batch-size and --grad-accum must be >= 1")

    truth_rng = random.Random(args.seed)
    truth = [truth_rng.uniform(-2.0, 2.0) for _ in range(DIM + 1)]
    init_rng = random.Random(args.seed + 1)
    params = [init_rng.gauss(0.0, 0.1) for _ in range(DIM + 1)]  # DIM weights and a bias
    samples_per_step = args.micro_batch_size * args.grad_accum

    event("run", world_size=1, local_rank=0, device="cpu", backend="none", dtype="float64",
          seed=args.seed, pid=os.getpid())
    event("batch", micro_batch_size=args.micro_batch_size, grad_accum=args.grad_accum, dp=1,
          samples_per_step=samples_per_step, input_shape=[args.micro_batch_size, DIM],
          input_dtype="float64")
    event("model", param_count=len(params), param_digest=digest(params))

    for step in range(args.max_steps):
        start = time.monotonic()
        grad = [0.0] * len(params)
        loss = 0.0
        for k in range(samples_per_step):
            x, y = sample(args.seed, step * samples_per_step + k, truth)
            err = sum(w * v for w, v in zip(params, x)) + params[-1] - y
            loss += err * err / samples_per_step
            for j, v in enumerate(x):
                grad[j] += 2.0 * err * v / samples_per_step
            grad[-1] += 2.0 * err / samples_per_step
        norm = math.sqrt(sum(g * g for g in grad))
        params = [p - args.lr * g for p, g in zip(params, grad)]
        print(f"it {step + 1} | loss {loss:.6f} | lr {args.lr:.3e} | gn {norm:.6f} | "
              f"bsz {samples_per_step} | {1000 * (time.monotonic() - start):.1f}ms", flush=True)
    event("done", steps=args.max_steps)


if __name__ == "__main__":
    main()
