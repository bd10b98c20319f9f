#!/usr/bin/python3
"""What bigmac-probe costs real programs (tests/programs/), digests on, both sides and the ratio.

    /usr/bin/python3 bench/probe/programs_overhead.py [--rounds 3] [--skip 3] [PROGRAM ...]

Each program is copied and patched as its end-to-end test does (tests/programs/program_test.py:
platform patches, its data generator), then run as one plain process, `--rounds` times in turn
without and with the probe (probe/ on PYTHONPATH, BIGMAC_PROBE_LOG set; parameter and input
digests on, their defaults; no step bound). Each step line of the program's own output is stamped
as it arrives (PYTHONUNBUFFERED); the first `--skip` steps (start-up, warm-up) are left out.
Per side: the median over its rounds;
the ratio is with / without. Both wall and CPU time per step are measured, from the step line
`--skip` to the last (the program's CPU from /proc/PID/stat, which a loaded machine's waiting
does not inflate); the CPU figures are the ones to compare. The probe's goal is under 2% of a step (issue 27).

Also the digests alone, from the probe's logs: how many parameters the model has and how many
input bytes a step digests, with the in-process costs bench/probe/probe_overhead.py measures.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "programs"))
import program_test  # noqa: E402 - the same preparation as the end-to-end tests

PY = "/usr/bin/python3"
# Each program's command for the benchmark (longer than its test's) and its step line.
PROGRAMS = {
    # Llama-2 style transformer (2 layers, dim 64): about 0.2 s a step here.
    "llama2c": (["train.py", "--compile=False", "--device=cpu", "--dtype=float32",
                 "--vocab_source=custom", "--vocab_size=512", "--dim=64", "--n_layers=2",
                 "--n_heads=4", "--n_kv_heads=4", "--max_seq_len=64", "--batch_size=8",
                 "--gradient_accumulation_steps=1", "--max_iters=40", "--eval_interval=1000",
                 "--eval_iters=1", "--warmup_iters=2", "--log_interval=1"],
                r"^\d+ \| loss "),
    # ResNet-18 siamese pairs on fake MNIST: about 0.35 s a step.
    "siamese_network": (["main.py", "--batch-size", "16", "--test-batch-size", "64", "--epochs",
                         "1", "--log-interval", "1"], r"^Train Epoch: "),
    # DCGAN, two optimizers an iteration: about 0.04 s an iteration.
    "dcgan": (["main.py", "--dataset", "fake", "--batchSize", "8", "--imageSize", "64", "--nz",
               "16", "--ngf", "8", "--ndf", "8", "--workers", "0", "--niter", "1",
               "--manualSeed", "1", "--outf", "out"], r"^\[\d+/\d+\]\[\d+/\d+\] Loss_D"),
}


def run(folder, command, pattern, probe_log, digests=True):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "RANK", "WORLD_SIZE", "LOCAL_RANK") and not k.startswith("BIGMAC_")}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if probe_log:
        env["PYTHONPATH"] = str(REPO / "probe")
        env["BIGMAC_PROBE_LOG"] = str(probe_log)
        if not digests:
            env.update(BIGMAC_PROBE_DIGEST="0", BIGMAC_PROBE_INPUT_DIGEST="0")
    stamps = []  # (wall s, the program's CPU s) as each step line arrives
    step = re.compile(pattern)
    with subprocess.Popen([PY] + command, cwd=folder, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as p:
        for line in p.stdout:
            if step.search(line):
                stamps.append((time.perf_counter(), cpu_seconds(p.pid)))
    if p.returncode != 0:
        sys.exit(f"{command[0]} in {folder} exited {p.returncode}")
    return stamps


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of a running process (/proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def per_step(stamps, skip):
    """(wall, CPU) seconds a step from the step line `skip` to the last: start-up cancels out,
    and CPU time does not count the waiting of a loaded machine."""
    if len(stamps) < skip + 2:
        return None
    (w0, c0), (w1, c1) = stamps[skip], stamps[-1]
    n = len(stamps) - 1 - skip
    return (w1 - w0) / n, (c1 - c0) / n


def digest_sizes(probe_log):
    evs = [json.loads(line) for line in Path(probe_log).read_text().splitlines()]
    params = next((e.get("param_count") for e in evs if e["ev"] == "model"), None)
    inputs = [e.get("input_digest_bytes") for e in evs if e["ev"] == "step" and e.get("input_digest_bytes")]
    digested = sum(1 for e in evs if e["ev"] == "step" and e.get("param_digest"))
    steps = sum(1 for e in evs if e["ev"] == "step")
    return params, (statistics.median(inputs) if inputs else 0), digested, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip", type=int, default=3, help="first steps left out")
    parser.add_argument("programs", nargs="*", default=list(PROGRAMS))
    args = parser.parse_args()
    print(f"one process, 1 thread, {args.rounds} rounds; per step: without the probe | with it "
          f"(digests on) | with it, digests off; CPU ms (wall ms)")
    print(f"{'program':>16} {'steps':>6} {'without':>16} {'with':>16} {'ratio':>7} {'no digests':>16} "
          f"{'ratio':>7} {'params':>9} {'input B':>8} {'param digests':>14}")
    for name in args.programs:
        command, pattern = PROGRAMS[name]
        with tempfile.TemporaryDirectory(prefix="bigmac-probe-bench-") as root:
            folder = program_test.prepare(name, root)
            sides = {"off": [], "on": [], "bare": []}
            steps = 0
            for r in range(args.rounds):
                for side in sides:
                    log = Path(root, f"probe-{side}-{r}-rank{{rank}}.jsonl") if side != "off" else None
                    stamps = run(folder, command, pattern, log, side == "on")
                    cost = per_step(stamps, args.skip)
                    if cost is None:
                        sys.exit(f"{name}: {len(stamps)} step lines matched {pattern!r}")
                    sides[side].append(cost)
                    steps = len(stamps)
            params, input_bytes, digested, logged = digest_sizes(
                Path(root, f"probe-on-{args.rounds - 1}-rank0.jsonl"))
            wall = {k: statistics.median(c[0] for c in v) * 1000 for k, v in sides.items()}
            cpu = {k: statistics.median(c[1] for c in v) * 1000 for k, v in sides.items()}
            print(f"{name:>16} {steps:>6} {cpu['off']:>7.2f} ({wall['off']:>6.2f}) "
                  f"{cpu['on']:>7.2f} ({wall['on']:>6.2f}) {cpu['on'] / cpu['off']:>7.4f} "
                  f"{cpu['bare']:>7.2f} ({wall['bare']:>6.2f}) {cpu['bare'] / cpu['off']:>7.4f} "
                  f"{params or 0:>9} {input_bytes:>8.0f} {digested:>6} of {logged:<5}")


if __name__ == "__main__":
    main()
