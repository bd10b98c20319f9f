#!/usr/bin/python3
"""A hand-written pipeline whose stage count is its world size, with no logging of its own: it
prints what it computed. Each rank builds the whole model from one seed and deletes what it does
not own, so its parameter names keep the model's layer numbers (`layers.2.weight`); activations go
forward with dist.send/recv in GPipe order, gradients back with dist.isend/irecv. One process runs
the whole model with the same micro-batches (no transfer at all).

    torchrun --nproc_per_node 2 pipeline_chain.py --steps 4 --micro-batches 3 --micro 2
    --plant overlap: the second stage also keeps (and runs) the first stage's last layer
"""
import argparse
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F

import rank_exit  # beside this file: how a rank ends

IN, HIDDEN, CLASSES, LAYERS = 8, 16, 4, 4


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(IN, HIDDEN)
        # A ModuleDict: deleting a layer keeps the others' names, so every stage names its layers
        # by their place in the whole model.
        self.layers = torch.nn.ModuleDict({str(i): torch.nn.Linear(HIDDEN, HIDDEN) for i in range(LAYERS)})
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        h = self.embed(x) if self.embed is not None else x
        for layer in self.layers.values():
            h = torch.tanh(layer(h))
        return self.head(h) if self.head is not None else h


def cut(model, stage, stages, plant):
    per = LAYERS // stages
    first, last = stage * per, (stage + 1) * per - 1 if stage < stages - 1 else LAYERS - 1
    if plant == "overlap" and stage > 0:
        first -= 1
    for i in range(LAYERS):
        if not first <= i <= last:
            del model.layers[str(i)]
    if stage > 0:
        model.embed = None
    if stage < stages - 1:
        model.head = None
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--micro-batches", type=int, default=3)
    parser.add_argument("--micro", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--plant", default="")
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    stage, stages = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    model = cut(Model(), stage, stages, args.plant)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    data = torch.Generator().manual_seed(11)
    m, shape = args.micro_batches, (args.micro, HIDDEN)
    prev, nxt = stage - 1, stage + 1 if stage + 1 < stages else -1

    for step in range(args.steps):
        inputs = [torch.randn(args.micro, IN, generator=data) for _ in range(m)]
        labels = [torch.randint(0, CLASSES, (args.micro,), generator=data) for _ in range(m)]
        kept, loss_sum = [], 0.0
        for mb in range(m):  # all forwards
            if prev < 0:
                h = inputs[mb]
            else:
                h = torch.empty(shape)
                dist.recv(h, prev)
                h.requires_grad_()
            out = model(h)
            if nxt >= 0:
                dist.send(out.detach(), nxt)
                kept.append((h, out))
            else:
                kept.append((h, F.cross_entropy(out, labels[mb]) / m))
        for mb in range(m):  # then all backwards
            h, out = kept[mb]
            if nxt >= 0:
                grad = torch.empty(shape)
                dist.irecv(grad, nxt).wait()
                out.backward(grad)
            else:
                out.backward()
                loss_sum += out.item()
            if prev >= 0:
                dist.isend(h.grad, prev).wait()
        opt.step()
        opt.zero_grad()
        if nxt < 0:
            print(f"step {step} loss {loss_sum!r}", flush=True)
    # PyTorch 2.x's Gloo may still be finishing a transfer's work on its own thread at shutdown
    # (see pipeline_p2p.py): the barrier and a collection give that thread its turn first.
    dist.barrier()
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
