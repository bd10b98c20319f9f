#!/usr/bin/python3
"""Steps per second of bigmac-train (C++/LibTorch) against the same training loop in Python.

    /usr/bin/python3 bench/trainer/compare.py [--binary build/bin/bigmac-train] [--steps 40]
                                              [--threads 1] [--micro 2] [--accum 4]

Both sides run the demo model (configs defaults: 4 layers, hidden 64, 4 heads, vocab 64, seq 32,
AdamW, warmup 5, clip 1.0; --layers/--hidden/--seq-length change it on both sides) single-process
on CPU with the same batch and intra-op threads. Speed is
measured between the first and the last step (start-up and the first step excluded), from the
wall time each side records when a step finishes. The losses of the first steps are compared too:
the Python loop mirrors the C++ one, so they must agree, or the comparison is not like for like.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import bigmac_reference  # noqa: E402


def find_binary(root):
    for candidate in ["build/bin/bigmac-train"] + sorted(
            os.path.join(d, "bin/bigmac-train") for d in os.listdir(root) if d.startswith("build")):
        path = os.path.join(root, candidate)
        if os.access(path, os.X_OK):
            return path
    sys.exit("bigmac-train not found; build it or pass --binary")


def run_cpp(binary, args):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "train.jsonl")
        argv = [binary, "--log-file", log, "--max-steps", str(args.steps),
                "--set", f"launch.threads_per_rank={args.threads}",
                "--set", f"train.micro_batch_size={args.micro}",
                "--set", f"train.gradient_accumulation_steps={args.accum}",
                "--set", f"train.seed={args.seed}",
                "--set", f"model.num_layers={args.layers}", "--set", f"model.hidden={args.hidden}",
                "--set", f"train.seq_length={args.seq_length}"]
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS"):
            env.pop(key, None)
        subprocess.run(argv, check=True, env=env)
        steps = []
        with open(log) as f:
            for line in f:
                event = json.loads(line)
                if event["ev"] == "step":
                    steps.append((event["t"], event["loss"]))
    return steps


def run_python(args):
    torch.set_num_threads(args.threads)
    settings = dict(num_layers=args.layers, hidden=args.hidden, heads=4, vocab=64, ffn_mult=4,
                    seq_length=args.seq_length,
                    tie_embeddings=True, seed=args.seed, lr=3e-3, warmup_steps=5,
                    weight_decay=0.01, grad_clip=1.0, micro_batch_size=args.micro,
                    grad_accum=args.accum, max_steps=args.steps)
    steps = []
    bigmac_reference.train(settings, lambda step, loss, norm, lr: steps.append((time.time(), loss)))
    return steps


def steps_per_second(steps):
    return (len(steps) - 1) / (steps[-1][0] - steps[0][0])


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=None)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--micro", type=int, default=2)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="best of N runs per side")
    args = parser.parse_args()
    binary = args.binary or find_binary(root)

    cpp_runs, py_runs = [], []
    for _ in range(args.repeats):  # interleaved, so background load hits both sides alike
        cpp_runs.append(run_cpp(binary, args))
        py_runs.append(run_python(args))
    cpp = max(steps_per_second(r) for r in cpp_runs)
    py = max(steps_per_second(r) for r in py_runs)

    worst = max(abs(c[1] - p[1]) / abs(c[1]) for c, p in zip(cpp_runs[0][:5], py_runs[0][:5]))
    print(f"settings: layers={args.layers} hidden={args.hidden} seq={args.seq_length} "
          f"steps={args.steps} micro={args.micro} accum={args.accum} "
          f"threads={args.threads} torch={torch.__version__} (best of {args.repeats})")
    print(f"bigmac-train (C++)  {cpp:8.2f} steps/s   {1000 / cpp:7.2f} ms/step")
    print(f"python loop         {py:8.2f} steps/s   {1000 / py:7.2f} ms/step")
    print(f"ratio C++/Python    {cpp / py:8.2f}x")
    print(f"first 5 losses agree to {worst:.1e} relative "
          f"({'same computation' if worst < 1e-4 else 'WARNING: not the same computation'})")


if __name__ == "__main__":
    main()
