"""A data-parallel program (gradients averaged with dist.all_reduce, Gloo on CPU) with a real
hang on rank 1, for the stacks the watchdog asks for (tests/probe/probe_stacks_test.py):

  --hang data      rank 1 never returns from load_batch at step --at (a data loader that hangs);
                   rank 0 waits for it in all_reduce
  --hang barrier   rank 1 alone calls barrier() at step --at; rank 0 goes on to its all_reduce
  --hang none      no hang

Logs nothing of its own but a line per step: the probe's events are what the tool reads."""
import argparse
import threading

import torch
import torch.distributed as dist

ASLEEP = threading.Event()  # never set: the hang is a wait that never ends, not a long sleep


def load_batch(step, rank, world, hang, at):
    """This rank's rows of the step's batch of 8: the ranks together read the single process's."""
    if hang == "data" and rank == 1 and step == at:
        ASLEEP.wait()
    g = torch.Generator().manual_seed(1000 + step)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    return x[rank::world], y[rank::world]


def train(args):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = load_batch(step, rank, world, args.hang, args.at)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        if args.hang == "barrier" and rank == 1 and step == args.at:
            dist.barrier()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--hang", choices=("none", "data", "barrier"), default="none")
    parser.add_argument("--at", type=int, default=3)
    train(parser.parse_args())
