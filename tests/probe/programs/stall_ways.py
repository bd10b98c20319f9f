"""A data-parallel program (gradients averaged with dist.all_reduce, then a stop flag broadcast
from rank 0, Gloo on CPU) with a real hang or desync on one rank at step --at, for the ledger and
the stacks the watchdog asks for (tests/probe/probe_stacks_test.py):

  --hang data      rank 1 never returns from load_batch (a data loader that hangs); rank 0
                   waits for it in all_reduce
  --hang barrier   rank 1 alone calls barrier() (the barrier rank 0 skipped); rank 0 goes on to
                   its all_reduce
  --hang extra     rank 1 calls one all_reduce more, of another size
  --hang shape     rank 1 reduces a gradient of another shape
  --hang order     rank 1 broadcasts its flag before its all_reduces, rank 0 after
  --hang p2p       each step rank 0 sends its loss to rank 1 (a pipeline cut); rank 0 hangs in
                   load_batch before its send and rank 1 waits in recv
  --hang none      no hang

--pg-timeout S: the process group's own timeout (Gloo's, for every collective), so that a rank
waiting for a hung one raises instead of waiting for the tool's watchdog.
--ddp: the model is DistributedDataParallel's, which averages the gradients itself (one bucket
all-reduce from C++ in backward) instead of the loop of all_reduce calls.

Logs nothing of its own but a line per step: the probe's events are what the tool reads."""
import argparse
import datetime
import gc
import threading

import torch
import torch.distributed as dist

ASLEEP = threading.Event()  # never set: the hang is a wait that never ends, not a long sleep


def load_batch(step, rank, world, asleep):
    """This rank's rows of the step's batch of 8: the ranks together read the single process's."""
    if asleep:
        ASLEEP.wait()
    g = torch.Generator().manual_seed(1000 + step)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    return x[rank::world], y[rank::world]


def train(args):
    timeout = {} if args.pg_timeout is None else {"timeout": datetime.timedelta(seconds=args.pg_timeout)}
    dist.init_process_group("gloo", **timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    net = torch.nn.parallel.DistributedDataParallel(model) if args.ddp else model
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        fault = args.hang if step == args.at else "none"
        asleep = (fault == "data" and rank == 1) or (fault == "p2p" and rank == 0 and world > 1)
        x, y = load_batch(step, rank, world, asleep)
        loss = torch.nn.functional.mse_loss(net(x), y)
        if args.hang == "p2p" and world > 1:  # the cut: rank 0's loss goes to rank 1
            seen = loss.detach().clone()
            if rank == 0:
                dist.send(seen, 1)
            elif rank == 1:
                dist.recv(seen, 0)
        opt.zero_grad()
        loss.backward()
        stop = torch.zeros(1)
        if fault == "barrier" and rank == 1:
            dist.barrier()
        if fault == "extra" and rank == 1:
            dist.all_reduce(torch.zeros(145))
        if fault == "order" and rank == 1:
            dist.broadcast(stop, 0)
        for p in model.parameters() if net is model else ():
            grad = p.grad.flatten()[:2] if fault == "shape" and rank == 1 and p.dim() > 1 else p.grad
            dist.all_reduce(grad)
            p.grad /= world
        if not (fault == "order" and rank == 1):
            dist.broadcast(stop, 0)
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    # Gloo's worker threads may outlive the group (DDP holds it) and abort the rank if one drops
    # a tensor after Python began shutting down (see ddp_trainer.py): their turn comes first.
    dist.barrier()
    del net, model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--hang", choices=("none", "data", "barrier", "extra", "shape", "order", "p2p"),
                        default="none")
    parser.add_argument("--at", type=int, default=3)
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--pg-timeout", type=float)
    train(parser.parse_args())
