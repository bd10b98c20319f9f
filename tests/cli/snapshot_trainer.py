"""A DDP trainer that resumes from a snapshot at a fixed path, as many tutorials teach: at start
it loads `snapshot.pt` from its working directory when the file is there and goes on from the
step after the snapshot's; rank 0 saves one after every step. No flag names the path and none
counts the steps (it trains until stopped), so only `trainer.fresh_paths` lets each gate start
fresh. Data: sample i of the run comes from i only and rank r takes its share of each step's,
so any number of ranks with the same samples per step reproduces the single-process loss.

    torchrun --nproc_per_node 2 tests/cli/snapshot_trainer.py --batch-size 4
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

SNAPSHOT = "snapshot.pt"


def sample_batch(first, count):
    xs, ys = [], []
    for i in range(first, first + count):
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        xs.append(x)
        ys.append(int(x[:4].sum() > 0))
    return torch.stack(xs), torch.tensor(ys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, required=True, help="per rank")
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    step = 0
    if os.path.exists(SNAPSHOT):
        snapshot = torch.load(SNAPSHOT)
        model.load_state_dict(snapshot["model"])
        opt.load_state_dict(snapshot["opt"])
        step = snapshot["step"] + 1
        print(f"Resuming training from snapshot at step {step}", flush=True)
    ddp = DistributedDataParallel(model)
    loss_fn = nn.CrossEntropyLoss()
    while True:
        x, y = sample_batch((step * world + rank) * args.batch_size, args.batch_size)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"iter {step}: loss {loss.item():.4f}", flush=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                       SNAPSHOT)
        step += 1


if __name__ == "__main__":
    main()
