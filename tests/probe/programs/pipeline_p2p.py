#!/usr/bin/python3
"""A hand-written two-stage pipeline (GPipe order) over torch.distributed point-to-point ops,
with no logging of its own: it prints what it computed. Two ranks under torchrun; rank 0 holds
the first layer, rank 1 the second and the loss, each with its own optimizer.

Activations go forward with dist.send/dist.recv on even steps and with batch_isend_irecv on odd
steps; gradients go back with dist.isend/dist.irecv. So every P2P entry point is used.

    torchrun --nproc_per_node 2 --redirects 2 --tee 1 pipeline_p2p.py --steps 4 --micro-batches 3
"""
import argparse
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F

import rank_exit  # beside this file: how a rank ends

HIDDEN = 16


def forward_transfer(step, tensor, peer, sending):
    if step % 2 == 0:
        (dist.send if sending else dist.recv)(tensor, peer)
    else:
        op = dist.isend if sending else dist.irecv
        for request in dist.batch_isend_irecv([dist.P2POp(op, tensor, peer)]):
            request.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--micro-batches", type=int, default=3)
    parser.add_argument("--micro", type=int, default=2)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    stage = dist.get_rank()
    torch.manual_seed(7)
    first, second = torch.nn.Linear(8, HIDDEN), torch.nn.Linear(HIDDEN, 4)  # same init everywhere
    layer = torch.nn.Sequential(first, torch.nn.Tanh()) if stage == 0 else second
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(11)
    m, shape = args.micro_batches, (args.micro, HIDDEN)

    for step in range(args.steps):
        inputs = [torch.randn(args.micro, 8, generator=data) for _ in range(m)]
        labels = [torch.randint(0, 4, (args.micro,), generator=data) for _ in range(m)]
        kept, loss_sum = [], 0.0
        for mb in range(m):  # all forwards
            if stage == 0:
                out = layer(inputs[mb])
                forward_transfer(step, out.detach(), 1, True)
                kept.append(out)
            else:
                h = torch.empty(shape)
                forward_transfer(step, h, 0, False)
                h.requires_grad_()
                loss = F.cross_entropy(layer(h), labels[mb]) / m
                kept.append((h, loss))
        for mb in range(m):  # then all backwards
            if stage == 0:
                grad = torch.empty(shape)
                dist.irecv(grad, 1).wait()
                kept[mb].backward(grad)
            else:
                h, loss = kept[mb]
                loss.backward()
                loss_sum += loss.item()
                dist.isend(h.grad, 0).wait()
        sq = sum(float(p.grad.double().pow(2).sum()) for p in layer.parameters())
        total = torch.tensor(sq, dtype=torch.float64)
        dist.all_reduce(total)
        opt.step()
        opt.zero_grad()
        line = f"stage {stage} step {step} grad_sq {sq!r} global_grad_norm {total.sqrt().item()!r}"
        print(line + (f" loss {loss_sum!r}" if stage == 1 else ""), flush=True)
    # PyTorch 2.x's Gloo may still be dropping the last all_reduce's work on its own thread when
    # the interpreter shuts down, which aborts the process ("terminate called without an active
    # exception"; 3 runs in 14 without the barrier, 2 in 40 with the barrier alone): the
    # barrier, the program's tensors gone and a collection give that thread its turn first.
    dist.barrier()
    del kept, inputs, labels, total, layer, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
