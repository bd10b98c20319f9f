#!/usr/bin/python3
"""A data-parallel trainer that holds its model the ways PyTorch 2.x offers, with no logging of
its own: it prints what it computed, which the probe's FSDP tests take as the truth.

    torchrun --nproc_per_node 2 fsdp_trainer.py --hold fsdp2|fsdp1|fsdp1-orig|ddp [--steps 5]

`fsdp2`: fully_shard on the first layer and on the model (DTensor parameters, Shard(0), the
first layer's 7 rows split 4 and 3); `fsdp1`: FullyShardedDataParallel likewise (flat
parameters); `fsdp1-orig`: the same with use_orig_params=True (the original parameters, as
views of each rank's part); `ddp`: DistributedDataParallel, every rank whole. The same seed,
data and optimizer whatever the holding: each rank reads its own samples (a per-rank seed, as
a DistributedSampler gives). Each step prints the rank's own loss, the norm clip_grad_norm_
returned (the whole model's) and how many collectives ran on the default group while
optimizer.step() ran (the process group's sequence number): the program's step makes none,
so they are the probe's. At the end, the program's own digest of the full parameters (gathered
its own way, as the probe's formula: dtype, shape and bytes, SHA-256), their count, and how
many collectives the default group ran in all (the program's, and the probe's if any).
"""
import argparse
import contextlib
import gc
import hashlib
import os

import torch
import torch.distributed as dist

import rank_exit  # beside this file: how a rank ends


def digest(params):
    sha = hashlib.sha256()
    for p in params:
        t = p.detach().contiguous()
        sha.update(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}".encode())
        sha.update(t.clone().view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()[:16]


def full_params(net, hold):
    """The whole model's parameters, gathered (the program's way, not the probe's), in the
    model's order, and a context that keeps them gathered."""
    if hold == "fsdp2":
        return contextlib.nullcontext([p.full_tensor() for p in net.parameters()])
    if hold.startswith("fsdp1"):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        @contextlib.contextmanager
        def summoned():
            with FSDP.summon_full_params(net, writeback=False):
                yield list(net.parameters())
        return summoned()
    return contextlib.nullcontext(list(net.module.parameters()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hold", choices=("fsdp2", "fsdp1", "fsdp1-orig", "ddp"), required=True)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    group = dist.distributed_c10d._get_default_group()
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    count = sum(p.numel() for p in model.parameters())
    if args.hold == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        fully_shard(model[0])
        net = fully_shard(model)
    elif args.hold.startswith("fsdp1"):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        orig = args.hold == "fsdp1-orig"
        cpu = torch.device("cpu")
        model[0] = FSDP(model[0], use_orig_params=orig, device_id=cpu)
        net = FSDP(model, use_orig_params=orig, device_id=cpu)
    else:
        net = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(net.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    with full_params(net, args.hold) as params:
        print(f"rank {rank} initial {digest(params)}", flush=True)
    for step in range(args.steps):
        x = torch.randn(4, 5, generator=data)
        y = torch.randn(4, 3, generator=data)
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        if args.hold.startswith("fsdp1"):
            norm = net.clip_grad_norm_(10.0)  # FSDP1's own: the whole model's norm
        else:
            norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
            norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm
        before = group._get_sequence_number_for_group()
        opt.step()
        collectives = group._get_sequence_number_for_group() - before
        opt.zero_grad()
        print(f"rank {rank} step {step} loss {loss.item()!r} norm {norm.item()!r} "
              f"collectives {collectives}", flush=True)
    made = group._get_sequence_number_for_group()  # every collective on the group so far
    with full_params(net, args.hold) as params:
        print(f"rank {rank} digest {digest(params)} params {count} "
              f"tensors {len(params)} collectives {made}", flush=True)
    # The model before the group: an FSDP1 model that outlives destroy_process_group() keeps
    # its Gloo group to interpreter exit, where PyTorch 2.11 aborts about one run in three
    # ("terminate called without an active exception").
    # Both ranks past their last collective, and the model's references gone for good (loss's
    # graph and reference cycles hold it too), before either rank tears the group down.
    dist.barrier()
    del net, model, opt, params, group, loss, norm
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
