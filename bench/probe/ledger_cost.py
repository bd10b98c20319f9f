#!/usr/bin/python3
"""What the probe's collective ledger (docs/probe.md, "The collective ledger") costs per
collective and per step: a one-process Gloo group issuing all_reduce on a small tensor (the
collective itself as cheap as it gets, so the ledger's share is the largest it can be), and
tests/probe/programs/stall_ways.py's steps (two all_reduce a step, 2 ranks under torchrun), and
DistributedDataParallel's steps (one process, Gloo) with its gradients in 1 bucket and in 16:
the probe's communication hook writes each bucket's entry (ledger.DdpBuckets), so the
difference between the two, over the difference in buckets, is what one bucket's entry costs.
Both sides run as separate processes in turn: without the probe, and with it.

    /usr/bin/python3 bench/probe/ledger_cost.py [--calls 20000] [--rounds 3]

Figures are medians over the rounds: the per-collective one is wall time inside the loop
(perf_counter) after 200 warm-up calls; the per-step one is the whole run's wall time over its
steps (the probe's step events and digests included, not the ledger alone).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PY = "/usr/bin/python3"

CHILD = r"""
import os, sys, time, torch, torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=0, world_size=1)
x = torch.ones(16)
n = int(sys.argv[1])
for _ in range(200):
    dist.all_reduce(x)
start = time.perf_counter()
for _ in range(n):
    dist.all_reduce(x)
print((time.perf_counter() - start) / n * 1e6)
dist.destroy_process_group()
"""

# DDP over 16 Linear(256, 256) layers (1 MiB of float32 gradients); bucket_cap_mb 0.25 puts them
# in 16 buckets, 25 (DDP's default) in one.
CHILD_DDP = r"""
import sys, time, torch, torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=0, world_size=1)
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(16)])
net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=float(sys.argv[3]))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(8, 256)
def step():
    net(x).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
n = int(sys.argv[1])
for _ in range(20):
    step()
start = time.perf_counter()
for _ in range(n):
    step()
print((time.perf_counter() - start) / n * 1e6)
dist.destroy_process_group()
"""


def env_for(probe, log_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIGMAC_PROBE")}
    env["OMP_NUM_THREADS"] = "1"
    if probe:
        env["PYTHONPATH"] = str(REPO / "probe")
        env["BIGMAC_PROBE_LOG"] = str(Path(log_dir) / "rank{rank}.jsonl")
        env["BIGMAC_PROBE_DDP_BUCKETS"] = "1"  # the DDP sides measure the bucket entries
    else:
        env.pop("PYTHONPATH", None)
    return env


def per_collective_us(probe, calls, port):
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([PY, "-c", CHILD, str(calls), str(port)], env=env_for(probe, d),
                             capture_output=True, text=True, check=True, timeout=600)
        if probe:
            lines = sum(1 for line in open(Path(d) / "rank0.jsonl") if '"ev":"coll"' in line)
            if lines < calls:
                raise SystemExit(f"the probe logged {lines} collectives of {calls}: not measuring the ledger")
    return float(out.stdout.strip().splitlines()[-1])


BUCKETS = {}  # asked -> buckets a step the probe logged


def ddp_step_us(probe, steps, port, bucket_cap_mb, buckets):
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([PY, "-c", CHILD_DDP, str(steps), str(port), str(bucket_cap_mb)],
                             env=env_for(probe, d), capture_output=True, text=True, check=True, timeout=600)
        if probe:
            logged = sum(1 for line in open(Path(d) / "rank0.jsonl") if '"by":"DDP bucket' in line)
            if logged < steps:
                raise SystemExit(f"the probe logged {logged} DDP buckets in {steps + 20} steps: not measuring them")
            BUCKETS[buckets] = logged / (steps + 20)  # DDP's first bucket is capped at 1 MiB
    return float(out.stdout.strip().splitlines()[-1])


def program_s(probe, steps, port):
    with tempfile.TemporaryDirectory() as d:
        argv = [PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
                "--redirects", "2", "--tee", "1", "--log_dir", str(Path(d) / "tr"),
                str(REPO / "tests" / "probe" / "programs" / "stall_ways.py"), "--steps", str(steps)]
        start = time.perf_counter()
        subprocess.run(argv, env=env_for(probe, d), capture_output=True, check=True, timeout=600)
        return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--ddp-steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    port = 29000 + os.getpid() % 500
    without, with_probe, prog_without, prog_with = [], [], [], []
    ddp = {(probe, buckets): [] for probe in (False, True) for buckets in (1, 16)}
    for r in range(args.rounds):
        base = port + 8 * r
        without.append(per_collective_us(False, args.calls, base))
        with_probe.append(per_collective_us(True, args.calls, base + 1))
        prog_without.append(program_s(False, args.steps, base + 2))
        prog_with.append(program_s(True, args.steps, base + 3))
        for i, (probe, buckets) in enumerate(ddp):
            ddp[probe, buckets].append(ddp_step_us(probe, args.ddp_steps, base + 4 + i,
                                                   25 if buckets == 1 else 0.25, buckets))
    a, b = statistics.median(without), statistics.median(with_probe)
    print(f"all_reduce float32[16], 1 process, Gloo, {args.calls} calls: without the probe {a:.1f} us, "
          f"with it {b:.1f} us a call: the ledger adds {b - a:.1f} us ({b / a:.2f}x)")
    c, e = statistics.median(prog_without), statistics.median(prog_with)
    print(f"stall_ways.py, 2 ranks under torchrun, {args.steps} steps (2 all_reduce a step): without "
          f"{c:.2f} s, with the probe {e:.2f} s ({e / c:.3f}x; the probe's step events and digests "
          f"included): {(e - c) / args.steps * 1000:.3f} ms a step")
    m = {key: statistics.median(v) for key, v in ddp.items()}
    for buckets in (1, 16):
        plain, probed = m[False, buckets], m[True, buckets]
        print(f"DDP, 16 x Linear(256, 256), 1 process, Gloo, {BUCKETS[buckets]:.1f} buckets a step, {args.ddp_steps} steps: without "
              f"the probe {plain / 1000:.3f} ms a step, with it {probed / 1000:.3f} ms ({probed / plain:.3f}x; "
              f"the probe's step events and digests included)")
    per_bucket = ((m[True, 16] - m[False, 16]) - (m[True, 1] - m[False, 1])) / (BUCKETS[16] - BUCKETS[1])
    print(f"one DDP bucket's ledger entry (the probe's hook against DDP's own C++ all-reduce): {per_bucket:.1f} us")


if __name__ == "__main__":
    sys.exit(main())
