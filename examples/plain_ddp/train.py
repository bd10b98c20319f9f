"""A plain PyTorch DDP trainer as people write them, with no logging of its own but a print of
the loss on rank 0 (no flush). bigmac-bringup brings it up with the probe alone
(docs/probe.md): nothing in this file knows about the tool.

    torchrun --nproc_per_node 2 --redirects 2 --tee 1 examples/plain_ddp/train.py \
        --batch-size 8 --grad-accum 2

Data: sample i of the run is drawn from (seed, i) only, and rank r of d takes its share of
each step's samples, so any number of ranks with the same samples per step sees the same
samples and reproduces the single-process loss.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def sample_batch(seed, first, count, features):
    xs, ys = [], []
    for i in range(first, first + count):
        g = torch.Generator().manual_seed(seed * 1_000_003 + i)
        x = torch.randn(features, generator=g)
        xs.append(x)
        ys.append(int(x[:4].sum() > 0) + 2 * int(x[4:8].sum() > 0))
    return torch.stack(xs), torch.tensor(ys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, required=True, help="per rank, per micro-batch")
    p.add_argument("--grad-accum", type=int, required=True)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    if distributed:
        model = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    per_step = args.batch_size * args.grad_accum * world
    for step in range(args.max_steps):
        opt.zero_grad()
        total = 0.0
        for k in range(args.grad_accum):
            first = step * per_step + (k * world + rank) * args.batch_size
            x, y = sample_batch(args.seed, first, args.batch_size, 16)
            loss = loss_fn(model(x), y) / args.grad_accum
            loss.backward()
            total += loss.item()
        opt.step()
        if rank == 0:
            print(f"iter {step}: loss {total:.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
