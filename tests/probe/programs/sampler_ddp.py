#!/usr/bin/python3
"""A DDP trainer that reads its data the usual way: a DataLoader over a dataset, each rank its
own share through a DistributedSampler, with gradient accumulation. With --same-samples it has
the bug the probe's input digests exist for: the sampler is told there is one replica
(num_replicas=1), so every rank reads the same samples in the same order. DDP runs that
happily (the averaged gradient of two copies is the gradient of one); only the data seen per
step is half of what the run claims.

    torchrun --nproc_per_node 2 --redirects 2 --tee 1 sampler_ddp.py --steps 5 --accum 2 [--same-samples]
        [--batchnorm [--no-broadcast-buffers]] [--quiet]

With --batchnorm the model has a BatchNorm1d layer, whose running statistics are buffers: DDP
broadcasts rank 0's before every forward unless --no-broadcast-buffers, when each rank keeps
statistics of its own (its parameters still agree: training uses each batch's statistics).

It prints, per step, its own SHA-256 (first 16 hex digits) of the step's first micro-batch and,
after the update, of its parameters, in the probe's digest format (dtype, shape, bytes): the
truth the probe's `input_digest` and `param_digest` must match; with --quiet nothing, as a
program that logs nothing of its own (the probe's events are then all the tool reads).
"""
import argparse
import contextlib
import gc
import hashlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import rank_exit  # beside this file: how a rank ends


def digest(tensors):
    sha = hashlib.sha256()
    for t in tensors:
        t = t.detach()
        sha.update(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}".encode())
        sha.update(t.contiguous().numpy().tobytes())
    return sha.hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--micro", type=int, default=4)
    parser.add_argument("--same-samples", action="store_true")
    parser.add_argument("--batchnorm", action="store_true")
    parser.add_argument("--no-broadcast-buffers", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = torch.Generator().manual_seed(0)
    samples = args.steps * args.accum * args.micro * world
    dataset = TensorDataset(torch.randn(samples, 16, generator=data),
                            torch.randint(0, 4, (samples,), generator=data))
    replicas, me = (1, 0) if args.same_samples else (world, rank)
    sampler = DistributedSampler(dataset, num_replicas=replicas, rank=me, shuffle=True, seed=7)
    loader = DataLoader(dataset, batch_size=args.micro, sampler=sampler, drop_last=True)

    torch.manual_seed(1234)
    norm = [torch.nn.BatchNorm1d(32)] if args.batchnorm else []
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), *norm, torch.nn.Tanh(), torch.nn.Linear(32, 4))
    net = DistributedDataParallel(model, broadcast_buffers=not args.no_broadcast_buffers)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    batches = iter(loader)
    for step in range(args.steps):
        local = 0.0
        for mb in range(args.accum):
            x, y = next(batches)
            if mb == 0:
                first = digest([x])
            with net.no_sync() if mb + 1 < args.accum else contextlib.nullcontext():
                loss = F.cross_entropy(net(x), y) / args.accum
                loss.backward()
            local += loss.item()
        opt.step()
        opt.zero_grad()
        if not args.quiet:
            print(f"rank {rank} step {step} input {first} loss {local!r} params {digest(model.parameters())}",
                  flush=True)
    # Gloo's worker threads may outlive the group (DDP holds it) and abort the rank if one drops
    # a tensor after Python began shutting down (see ddp_trainer.py): their turn comes first.
    dist.barrier()
    del net, model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
