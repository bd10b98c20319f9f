#!/usr/bin/python3
"""Measured pipeline bubble of bigmac-train beside the theory, from its `mb` events.

    /usr/bin/python3 bench/trainer/pipeline_bubble.py [--binary build/bin/bigmac-train] [--steps 6]

For pp = 2, 4 and M = 4, 8 micro-batches, schedules 1f1b and gpipe: every stage's idle share of
each step (1 - busy / step span, busy = the sum of its forward and backward times, the span from
the first start to the last end over all stages) averaged over the steps after the first, next to
(p - 1) / (M + p - 1). On a machine with fewer cores than stages the ranks also wait for a core,
which shows up as extra bubble; run it where every rank has its own core.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import find_binary  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary, pp, micro_batches, schedule, steps):
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        procs = []
        for rank in range(pp):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(pp), LOCAL_RANK=str(rank),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            argv = [binary, "--log-file", os.path.join(tmp, f"rank{rank}.jsonl"),
                    "--max-steps", str(steps), "--set", f"parallel.pp_size={pp}",
                    "--set", f"parallel.schedule={schedule}",
                    "--set", f"train.gradient_accumulation_steps={micro_batches}",
                    "--set", "launch.threads_per_rank=1"]
            procs.append(subprocess.Popen(argv, env=env))
        for proc in procs:
            if proc.wait(timeout=600) != 0:
                sys.exit(f"bigmac-train failed (pp={pp} M={micro_batches} {schedule})")
        events = []
        for rank in range(pp):
            with open(os.path.join(tmp, f"rank{rank}.jsonl")) as f:
                events += [e for e in map(json.loads, f) if e["ev"] == "mb"]
    bubbles = [[] for _ in range(pp)]
    for step in range(1, steps):
        mine = [e for e in events if e["global_step"] == step]
        span = max(e["end"] for e in mine) - min(e["start"] for e in mine)
        for stage in range(pp):
            busy = sum(e["end"] - e["start"] for e in mine if e["stage"] == stage)
            bubbles[stage].append(1 - busy / span)
    return [sum(b) / len(b) for b in bubbles]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=None)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    binary = args.binary or find_binary(root)
    print(f"{'schedule':8} {'pp':>3} {'M':>3} {'theory':>7}  measured per stage")
    for schedule in ("1f1b", "gpipe"):
        for pp in (2, 4):
            for m in (4, 8):
                measured = run(binary, pp, m, schedule, args.steps)
                theory = (pp - 1) / (m + pp - 1)
                stages = " ".join(f"{b:5.2f}" for b in measured)
                print(f"{schedule:8} {pp:3d} {m:3d} {theory:7.2f}  {stages}")


if __name__ == "__main__":
    main()
