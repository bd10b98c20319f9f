"""Training loops that use torch.compile the ways programs do, for the probe's compile tests and
bench/probe/compile_graphs.py: each returns what the loop itself computed, and TorchDynamo's
own count of what it captured (graphs, graph breaks, recompiles) is read after it ran.

    way = "module"      torch.compile(model)                  (nanoGPT, llama2.c, HF Trainer)
          "in_place"    model.compile()                       (nn.Module.compile)
          "blocks"      each block's .compile()               (torchtitan)
          "loss_fn"     torch.compile(a loss function that calls the model)
          "train_step"  torch.compile(forward + loss + backward)
          "optimizer"   torch.compile(a function calling opt.step())  (the compiled-optimizer recipe)
          "ddp_module"  torch.compile(DistributedDataParallel(model)), a one-process group
          "ddp_of_compiled"  DistributedDataParallel(torch.compile(model)), likewise

The model is defined here (not an nn.Sequential): Dynamo traces user code, and a model made of
torch.nn's own classes only is skipped by nn.Module.compile(). It has BatchNorm, so buffers too.
"""
import torch
import torch.nn.functional as F

WAYS = ("module", "in_place", "blocks", "loss_fn", "train_step", "optimizer", "ddp_module",
        "ddp_of_compiled")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.bn = torch.nn.BatchNorm1d(16)

    def forward(self, x):
        return x + torch.tanh(self.bn(self.fc(x)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 16)
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = block(h)
        return self.out(h)


def dynamo_counts():
    """(graphs, graph breaks, recompiles) TorchDynamo counted in this process so far."""
    from torch._dynamo.utils import counters, get_compilation_metrics

    graphs = counters["stats"]["unique_graphs"]
    breaks = sum(counters["graph_break"].values())
    recompiles = sum(1 for m in get_compilation_metrics() if getattr(m, "recompile_reason", None))
    return graphs, breaks, recompiles


def reset_dynamo():
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch._dynamo.utils.clear_compilation_metrics()


def train(way, steps=5, accum=2, backend="aot_eager", micro=6):
    """Trains Net `steps` steps of `accum` micro-batches the given way. Returns the loop's own
    record: each step's loss (the sum of the micro-batches' scaled losses), the norm the clip
    returned and the inputs' sizes."""
    torch.manual_seed(0)
    model = Net()
    if way.startswith("ddp"):
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    net = model
    if way == "module":
        net = torch.compile(model, backend=backend)
    elif way == "in_place":
        model.compile(backend=backend)
    elif way == "blocks":
        for block in model.blocks:
            block.compile(backend=backend)
    elif way == "ddp_module":
        net = torch.compile(torch.nn.parallel.DistributedDataParallel(model), backend=backend)
    elif way == "ddp_of_compiled":
        net = torch.nn.parallel.DistributedDataParallel(torch.compile(model, backend=backend))

    def loss_of(x, y):
        return F.cross_entropy(net(x), y) / accum

    def micro_step(x, y):
        loss = loss_of(x, y)
        loss.backward()
        return loss

    def opt_step():
        opt.step()

    if way == "loss_fn":
        loss_of = torch.compile(loss_of, backend=backend)
    elif way == "train_step":
        micro_step = torch.compile(micro_step, backend=backend)
    elif way == "optimizer":
        opt_step = torch.compile(opt_step, backend=backend)
    data = torch.Generator().manual_seed(1)
    record = []
    for _ in range(steps):
        losses = []
        for _ in range(accum):
            x = torch.randn(micro, 8, generator=data)
            y = torch.randint(0, 4, (micro,), generator=data)
            losses.append(micro_step(x, y).item())
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt_step()
        opt.zero_grad()
        record.append({"loss": sum(losses), "preclip": norm, "samples": micro * accum})
    return record


if __name__ == "__main__":
    # python3 compiled_loops.py WAY [BACKEND]: one line of JSON, the loop's record and Dynamo's counts.
    import json
    import sys

    torch.set_num_threads(1)
    result = train(sys.argv[1], backend=sys.argv[2] if len(sys.argv) > 2 else "aot_eager")
    graphs, breaks, recompiles = dynamo_counts()
    print(json.dumps({"record": result, "graphs": graphs, "breaks": breaks, "recompiles": recompiles}))
