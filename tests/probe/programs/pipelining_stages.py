#!/usr/bin/env python3
"""A torch.distributed.pipelining program (PyTorch 2.x) with no logging of its own: it prints
what it computed. A small token model (embedding, numbered blocks, head) cut into one stage per
process, trained for a few steps under a schedule, the loss on the last stage.

    torchrun --nproc_per_node 2 pipelining_stages.py --schedule 1f1b --micro-batches 4

--split picks how the stages are made: `manual` builds the whole model on every rank and deletes
what is not the rank's (the blocks keep their names, `blocks.3`), `slice` makes each stage an
nn.Sequential of its slice of the whole model's module list (names `0.`, `1.`, ... within the
stage), `tracer` cuts the model with pipeline() at a block. --schedule interleaved runs two
stages per rank (ScheduleInterleaved1F1B).

--plant makes one of the mistakes the gates must catch: `overlap` (a block on two stages),
`out-of-range` (the last stage is cut past the model's end: it holds no block), `trim` (the first
stage cuts the sequence short at the cut), `every-rank-saves` (each rank writes a checkpoint).
"""
import argparse
import gc
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                          ScheduleInterleaved1F1B, SplitPoint, pipeline)

import rank_exit  # beside this file: how a rank ends

VOCAB, DIM = 32, 16


class Block(torch.nn.Module):
    def __init__(self, trim=False):
        super().__init__()
        self.linear = torch.nn.Linear(DIM, DIM)
        self.trim = trim

    def forward(self, x):
        out = x + torch.tanh(self.linear(x))
        return out[:, :-1] if self.trim else out


class Model(torch.nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.blocks = torch.nn.ModuleDict({str(i): Block() for i in range(blocks)})
        self.head = torch.nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens) if self.embed is not None else tokens
        for block in self.blocks.values():
            h = block(h)
        return self.head(h) if self.head is not None else h


class Slice(torch.nn.Module):
    """A flat list of the model's parts, each stage an nn.Sequential of its slice."""

    def __init__(self, blocks):
        super().__init__()
        self.parts = torch.nn.ModuleList([torch.nn.Embedding(VOCAB, DIM)] +
                                         [Block() for _ in range(blocks)] +
                                         [torch.nn.Linear(DIM, VOCAB)])


def ranges(blocks, stages, plant):
    """Blocks [first, last) of each stage: an even cut."""
    per = blocks // stages
    out = [[s * per, (s + 1) * per] for s in range(stages)]
    out[-1][1] = blocks
    if stages == 1:  # one stage has no cut to get wrong
        return out
    if plant == "overlap":
        out[1][0] -= 1
    if plant == "out-of-range":
        out[-2][1] = blocks
        out[-1] = [blocks, blocks]
    return out


def manual_stage(model, index, stages, blocks, plant):
    first, last = ranges(blocks, stages, plant)[index]
    for name in list(model.blocks.keys()):
        if not first <= int(name) < last:
            del model.blocks[name]
    if index != 0:
        model.embed = None
    if index != stages - 1:
        model.head = None
    if plant == "trim" and index == 0 and stages > 1:
        list(model.blocks.values())[-1].trim = True
    return model


def slice_stage(blocks, index, stages, plant, example):
    """The stage is made here, while the whole model it is cut from is alive (as a builder
    function of a real program makes it)."""
    whole = Slice(blocks)
    parts = list(whole.parts)
    first, last = ranges(blocks, stages, plant)[index]
    lo = 0 if index == 0 else first + 1
    hi = len(parts) if index == stages - 1 else last + 1
    module = torch.nn.Sequential(*parts[lo:hi])
    return PipelineStage(module, index, stages, torch.device("cpu"), input_args=(example,)), module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8, help="the whole step's samples")
    parser.add_argument("--micro-batch-size", type=int, default=0,
                        help="instead of --batch-size: each micro-batch's samples")
    parser.add_argument("--seq-len", type=int, default=6)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--schedule", choices=["gpipe", "1f1b", "interleaved"], default="1f1b")
    parser.add_argument("--split", choices=["manual", "slice", "tracer"], default="manual")
    parser.add_argument("--plant", default="none",
                        choices=["none", "overlap", "out-of-range", "trim", "every-rank-saves"])
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()

    torch.set_num_threads(1)
    os.makedirs(args.out_dir, exist_ok=True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    per_rank = 2 if args.schedule == "interleaved" else 1
    stages = world * per_rank
    torch.manual_seed(5)
    if args.micro_batch_size > 0:
        args.batch_size = args.micro_batch_size * args.micro_batches
    mb = args.batch_size // args.micro_batches
    device = torch.device("cpu")
    made = []
    for index in range(rank, stages, world):  # interleaved: stages rank, rank + world
        if args.split == "tracer":
            torch.manual_seed(5)
            model = Model(args.blocks)
            per = args.blocks // stages
            spec = {f"blocks.{s * per}": SplitPoint.BEGINNING for s in range(1, stages)}
            pipe = pipeline(model, mb_args=(torch.zeros(mb, args.seq_len, dtype=torch.long),),
                            split_spec=spec)
            made.append((pipe.build_stage(index, device), pipe.get_stage_module(index)))
            continue
        torch.manual_seed(5)
        example = (torch.zeros(mb, args.seq_len, dtype=torch.long) if index == 0
                   else torch.zeros(mb, args.seq_len, DIM))
        if args.split == "slice":
            made.append(slice_stage(args.blocks, index, stages, args.plant, example))
            continue
        module = manual_stage(Model(args.blocks), index, stages, args.blocks, args.plant)
        made.append((PipelineStage(module, index, stages, device, input_args=(example,)), module))
    params = [p for _, module in made for p in module.parameters()]
    opt = torch.optim.SGD(params, lr=0.5)

    def loss_fn(logits, target):
        return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))

    if args.schedule == "interleaved":
        schedule = ScheduleInterleaved1F1B([s for s, _ in made], args.micro_batches, loss_fn=loss_fn)
    else:
        kind = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
        schedule = kind(made[0][0], args.micro_batches, loss_fn=loss_fn)
    data = torch.Generator().manual_seed(9)
    holds_first = any(s.is_first for s, _ in made)
    holds_last = any(s.is_last for s, _ in made)
    for step in range(args.steps):
        tokens = torch.randint(0, VOCAB, (args.batch_size, args.seq_len), generator=data)
        target = (tokens + 1) % VOCAB
        opt.zero_grad()
        losses = []
        if holds_first and holds_last:
            schedule.step(tokens, target=target, losses=losses)
        elif holds_first:
            schedule.step(tokens)
        elif holds_last:
            schedule.step(target=target, losses=losses)
        else:
            schedule.step()
        opt.step()
        if holds_last:
            values = [float(v) for v in losses]
            print(f"step {step} rank {rank} losses {values!r} mean {sum(values) / len(values)!r}",
                  flush=True)
        if args.plant == "every-rank-saves" or rank == 0:
            torch.save({n: p.detach() for n, p in made[0][1].named_parameters()},
                       os.path.join(args.out_dir, f"stage-rank{rank}.pt"))
    # Gloo's worker threads may still hold a transfer's tensors (see pipeline_p2p.py).
    dist.barrier()
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    rank_exit.end_rank()
