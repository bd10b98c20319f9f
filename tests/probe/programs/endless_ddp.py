#!/usr/bin/python3
"""A DDP trainer with no step limit of its own: it trains until something ends it (in the probe
tests, BIGMAC_PROBE_MAX_STEPS). It prints each step after the step, then what ran on the way
out: its `finally:` block, its atexit handler and any destroy_process_group() call (it wraps
that function to see it), so the tests can tell how it ended.

    torchrun --nproc_per_node 2 --redirects 2 --tee 1 endless_ddp.py
    endless_ddp.py --spawn 2 --init file:///tmp/store   (torch.multiprocessing.spawn: rank=)
"""
import argparse
import atexit
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def say(line):
    """One write per line: --spawn's ranks share one stdout, and print() writes the newline
    apart under PYTHONUNBUFFERED."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def train(rank, world, init_method):
    torch.set_num_threads(1)
    if init_method:
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo")
    original = dist.destroy_process_group

    def destroy(*args, **kwargs):
        say(f"rank {rank} destroy_process_group")
        return original(*args, **kwargs)
    dist.destroy_process_group = destroy
    atexit.register(lambda: say(f"rank {rank} atexit"))

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    step = 0
    try:
        while True:
            loss = model(torch.randn(3, 4, generator=data)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            say(f"rank {rank} step {step} loss {loss.item()!r}")
            step += 1
    finally:
        say(f"rank {rank} finally after {step} steps")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawn", type=int, default=0, help="start this many ranks with mp.spawn")
    parser.add_argument("--init", default="", help="init_method for --spawn")
    args = parser.parse_args()
    if args.spawn:
        mp.spawn(train, args=(args.spawn, args.init), nprocs=args.spawn)
    else:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), None)


if __name__ == "__main__":
    main()
