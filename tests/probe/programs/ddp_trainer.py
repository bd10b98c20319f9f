#!/usr/bin/python3
"""A plain PyTorch DDP trainer, written the way people write one, with no logging of its own:
it prints what it computed each step. The probe tests read these prints as the truth the
probe's events must match (they print more than the loss only so that lr, both gradient norms
and the parameter count can be checked too).

    torchrun --nproc_per_node 2 --redirects 2 --tee 1 ddp_trainer.py --steps 6 --accum 2

Runs alone (one process, no process group) as well. Rank r draws its own data (a per-rank
seed, as with a DistributedSampler).
"""
import argparse
import contextlib
import gc
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import rank_exit  # beside this file: how a rank ends


def digest(model):
    sha = hashlib.sha256()
    for p in model.parameters():
        sha.update(p.detach().numpy().tobytes())
    return sha.hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--micro", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip", type=float, default=0.8)
    parser.add_argument("--save", default="")
    args = parser.parse_args()

    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(1)
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    print(f"rank {rank} params {sum(p.numel() for p in model.parameters())}", flush=True)
    net = DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
    data = torch.Generator().manual_seed(100 + rank)

    for step in range(args.steps):
        local = 0.0
        for mb in range(args.accum):
            x = torch.randn(args.micro, 16, generator=data)
            y = torch.randint(0, 4, (args.micro,), generator=data)
            last = mb + 1 == args.accum
            # DDP all-reduces on the last micro-batch's backward only.
            with net.no_sync() if world > 1 and not last else contextlib.nullcontext():
                loss = F.cross_entropy(net(x), y) / args.accum
                loss.backward()
            local += loss.item()
        lr = opt.param_groups[0]["lr"]
        before = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
        after = sum(float(p.grad.double().pow(2).sum()) for p in model.parameters()) ** 0.5
        opt.step()
        sched.step()
        opt.zero_grad()
        mean = torch.tensor(local, dtype=torch.float64)
        if world > 1:
            dist.all_reduce(mean)
            mean /= world
        print(f"rank {rank} step {step} loss {local!r} mean_loss {mean.item()!r} lr {lr!r} "
              f"grad_norm {before!r} clipped {after!r}", flush=True)
    if args.save and rank == 0:
        torch.save(model.state_dict(), args.save)
    print(f"rank {rank} digest {digest(model)}", flush=True)
    if world > 1:
        # PyTorch 2.11's Gloo worker threads outlive the program when DDP holds the group, and
        # one releasing a tensor Python can see after the interpreter began shutting down
        # aborts the rank ("terminate called without an active exception"; 5 plain runs in 20
        # before this). Both ranks past their last collective, and DDP gone, before teardown.
        dist.barrier()
        del net, model, opt, sched
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
