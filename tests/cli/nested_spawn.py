"""A program whose spawned worker spawns again: the probe runs the outer worker in place, as the
rank the tool started, and the inner spawn is real. adopt refuses it (no gate could set how many
processes it runs); tests/cli/adopt_test.cpp.
"""
import torch
import torch.multiprocessing as mp


def inner(index):
    torch.manual_seed(index)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        loss = model(torch.ones(4, 2)).pow(2).mean()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def outer(index):
    mp.spawn(inner, nprocs=2)


if __name__ == "__main__":
    mp.spawn(outer, nprocs=1)
