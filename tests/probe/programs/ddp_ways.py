#!/usr/bin/python3
"""A data-parallel trainer that averages its gradients the ways PyTorch offers, with no logging
of its own: it prints what it computed, which the probe's tests take as the truth.

    torchrun --nproc_per_node 2 ddp_ways.py --way plain|static|fp16_hook|collectives [--steps 5]

`plain`: DistributedDataParallel; `static`: the same with static_graph=True; `fp16_hook`: the
same with the fp16 compression communication hook (register_comm_hook: gradients averaged in
float16); `collectives` (PyTorch 2.x): no DDP, the gradients flattened, reduce_scatter_tensor
to each rank's share, all_gather_into_tensor back, the mean loss with a functional collective
(torch.distributed._functional_collectives), as hand-written ZeRO-style loops do. Two
micro-batches a step (DDP's first under no_sync, but with the static graph), each rank its own
samples (a per-rank seed).
Each step prints the rank's own loss, the mean over the ranks, the norm of the gradients the
optimizer applies and how many collectives ran on the default group during optimizer.step()
(the program's step makes none). At the end, the program's own digest of the parameters.
"""
import argparse
import contextlib
import gc
import hashlib

import torch
import torch.distributed as dist
import torch.nn.functional as F

import rank_exit  # beside this file: how a rank ends


def digest(params):
    sha = hashlib.sha256()
    for p in params:
        t = p.detach().contiguous()
        sha.update(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}".encode())
        sha.update(t.clone().view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()[:16]


def average_by_hand(params, world):
    """Every rank's gradients averaged through reduce_scatter_tensor and all_gather_into_tensor
    on one flat buffer (padded to a multiple of the world size)."""
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    pad = -flat.numel() % world
    flat = torch.cat([flat, flat.new_zeros(pad)])
    share = flat.new_empty(flat.numel() // world)
    dist.reduce_scatter_tensor(share, flat)
    share /= world
    dist.all_gather_into_tensor(flat, share)
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
        offset += p.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--way", choices=("plain", "static", "fp16_hook", "collectives"), required=True)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.distributed_c10d._get_default_group()
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    net = model
    if args.way != "collectives":
        net = torch.nn.parallel.DistributedDataParallel(model, static_graph=args.way == "static")
        if args.way == "fp16_hook":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    print(f"rank {rank} initial {digest(params)}", flush=True)
    for step in range(args.steps):
        local = 0.0
        for mb in range(2):
            x = torch.randn(4, 16, generator=data)
            y = torch.randint(0, 4, (4,), generator=data)
            # A static graph cannot begin under no_sync (the reducer asserts, 1.13 and 2.11
            # alike): it reduces every micro-batch, the same mean of the sums.
            first = mb == 0 and net is not model and args.way != "static"
            with net.no_sync() if first else contextlib.nullcontext():
                loss = F.cross_entropy(net(x), y) / 2
                loss.backward()
            local += loss.item()
        if args.way == "collectives":
            average_by_hand(params, world)
            import torch.distributed._functional_collectives as funcol

            mean = funcol.all_reduce(torch.tensor(local, dtype=torch.float64), "sum", dist.group.WORLD)
            mean = funcol.wait_tensor(mean) / world
        else:
            mean = torch.tensor(local, dtype=torch.float64)
            dist.all_reduce(mean)
            mean /= world
        norm = sum(float(p.grad.double().pow(2).sum()) for p in params) ** 0.5
        before = group._get_sequence_number_for_group()
        opt.step()
        collectives = group._get_sequence_number_for_group() - before
        opt.zero_grad()
        print(f"rank {rank} step {step} loss {local!r} mean {mean.item()!r} norm {norm!r} "
              f"collectives {collectives}", flush=True)
    print(f"rank {rank} digest {digest(params)}", flush=True)
    # Both ranks past their last collective before either tears its group down: without it,
    # torch 2.11's Gloo group under the fp16 hook aborts a rank at exit about one run in four
    # ("terminate called without an active exception"), with or without the probe.
    dist.barrier()
    del net, model, opt, params, group, loss
    gc.collect()  # DDP's reducer and its hook's futures hold the group: gone before it is
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
