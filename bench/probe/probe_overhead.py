#!/usr/bin/python3
"""What bigmac-probe costs a training program: examples/torch_trainer with and without the probe.

    /usr/bin/python3 bench/probe/probe_overhead.py [--blocks 20] [--block-steps 3] [--rounds 3]
                                                   [--short 5] [--long 25] [--micro-steps 2000]

1. Per step, in process (the goal's figure). The example trainer's own Trainer (demo model,
   single process, one thread) trains in this interpreter; blocks of `--block-steps` steps
   alternate between torch with the probe's hooks and torch without them, `--blocks` times
   each. A block's cost is the process CPU time it took (waiting on a loaded machine is not
   counted); each side's median block is printed, and the median of the per-pair ratios.
   Then the probe's own work at a step (gradient norm, learning rates, the `step` and
   `heartbeat` lines), timed alone on the trainer's optimizer: the part of the difference that
   is the probe's and not the machine's noise. And the digests alone: a step's first input
   (every step) and the parameters after the update (steps 0, 1, 2, 4, 8, ...), with the
   latter's cost per step over a run of 1000 steps.
2. Whole process. The trainer as a program, without and with the probe (probe/ on PYTHONPATH,
   BIGMAC_PROBE_LOG set), in turn, `--rounds` times: a short and a long run per side, whose
   CPU difference over the step difference is the side's CPU per step (start-up cancels out),
   and the long run's whole CPU (torch's import and the probe's start-up included).
3. Absolute cost: `--micro-steps` steps of a one-layer model (forward, backward, clip, AdamW
   step) with and without the hooks, in alternating blocks, in microseconds of CPU per step.

The probe's goal is under 2% per step on the example trainer (issue 14).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "examples" / "torch_trainer" / "train.py"
PY = "/usr/bin/python3"


def events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_trainer(steps, probe, tmp):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "RANK", "WORLD_SIZE", "LOCAL_RANK") and not k.startswith("BIGMAC_")}
    env["OMP_NUM_THREADS"] = "1"
    log = Path(tmp) / "train.jsonl"
    probe_log = Path(tmp) / "probe.jsonl"
    for p in (log, probe_log):
        p.unlink(missing_ok=True)
    if probe:
        env["PYTHONPATH"] = str(REPO / "probe")
        env["BIGMAC_PROBE_LOG"] = str(probe_log)
    argv = [PY, str(TRAIN), "--log-file", str(log), "--set", f"train.max_steps={steps}",
            "--set", "train.checkpoint_every=0", "--set", "launch.threads_per_rank=1"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ms = [e["step_ms"] for e in events(log) if e["ev"] == "step"]
    if probe:
        probed = sum(e["ev"] == "step" for e in events(probe_log))
        if probed != steps:
            sys.exit(f"the probe logged {probed} steps of {steps}: not a like-for-like run")
    return {"step_ms": statistics.median(ms[1:]), "first_ms": ms[0], "wall": wall, "cpu": cpu}


def end_to_end(rounds, short, long):
    """CPU seconds per step = (CPU of a long run - CPU of a short run) / (long - short): start-up,
    torch's import and the first step cancel out, and a loaded machine's waiting is not counted
    (wall time is, so the trainer's own step_ms is shown as well)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bigmac-probe-bench-") as tmp:
        run_trainer(3, True, tmp)  # warm the page cache for both sides
        for _ in range(rounds):
            row = []
            for probe in (False, True):
                a, b = run_trainer(short, probe, tmp), run_trainer(long, probe, tmp)
                row.append({"cpu_ms": (b["cpu"] - a["cpu"]) / (long - short) * 1000.0,
                            "step_ms": b["step_ms"], "first_ms": b["first_ms"], "cpu": b["cpu"]})
            rows.append(row)
    print(f"examples/torch_trainer (demo model), single process, 1 thread: runs of {short} and {long} steps, "
          f"{rounds} rounds; each pair: without | with the probe")
    print(f"{'round':>5} {'cpu ms/step':>17} {'wall step_ms':>17} {'first step_ms':>17} {'process cpu s':>17}")
    for i, (a, b) in enumerate(rows):
        print(f"{i:>5} {a['cpu_ms']:8.2f} {b['cpu_ms']:8.2f} {a['step_ms']:8.2f} {b['step_ms']:8.2f} "
              f"{a['first_ms']:8.2f} {b['first_ms']:8.2f} {a['cpu']:8.2f} {b['cpu']:8.2f}")
    for key, name in (("cpu_ms", "cpu per step"), ("step_ms", "wall step_ms"), ("first_ms", "first step"),
                      ("cpu", f"process cpu ({long} steps)")):
        ratios = [b[key] / a[key] for a, b in rows]
        print(f"{name:>24}: median without {statistics.median(a[key] for a, _ in rows):9.3f}, with "
              f"{statistics.median(b[key] for _, b in rows):9.3f}, median ratio {statistics.median(ratios):.4f} "
              f"(pairs {min(ratios):.4f}-{max(ratios):.4f})")


def probe_tools():
    sys.path.insert(0, str(REPO / "probe"))
    from bigmac_probe.patch_set import PatchSet
    from bigmac_probe.probe import Probe
    from bigmac_probe.probe_settings import ProbeSettings
    from bigmac_probe.torch_patches import instrument_optimizer_class, instrument_torch
    return PatchSet, Probe, ProbeSettings, instrument_optimizer_class, instrument_torch


def timed_us(call, repeat=5, number=200):
    """The median over `repeat` runs of CPU microseconds per call of `call()`."""
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            call()
        runs.append((time.process_time() - start) / number * 1e6)
    return statistics.median(runs)


def trainer_in_process(blocks, block_steps):
    import torch

    PatchSet, Probe, ProbeSettings, instrument_optimizer_class, instrument_torch = probe_tools()
    sys.path.insert(0, str(TRAIN.parent))
    import settings
    import train
    from bigmac_log import BigmacLog

    with tempfile.TemporaryDirectory(prefix="bigmac-probe-bench-") as tmp:
        cfg = settings.load(None, ["launch.threads_per_rank=1"])
        torch.set_num_threads(1)
        trainer = train.Trainer(cfg, BigmacLog(f"{tmp}/train.jsonl", rank=0), f"{tmp}/train.jsonl")
        trainer.init_distributed()  # one process: no group, as a single run
        trainer.build()
        probe = Probe(ProbeSettings(log_template=f"{tmp}/probe{{rank}}.jsonl"), environ={})
        patches = PatchSet()
        step = 0

        def block(hooked):
            nonlocal step
            if hooked:
                counted = probe.steps
                instrument_torch(probe, patches, torch)
                instrument_optimizer_class(probe, patches, type(trainer.optimizer))
                if counted is not None:
                    # The step count goes on over the blocks, as in one run: the parameter
                    # digests come at steps 0, 1, 2, 4, 8, ... of it, not at every block's start.
                    probe.steps = counted
            start = time.process_time()
            for _ in range(block_steps):
                trainer.train_step(step)
                step += 1
            spent = (time.process_time() - start) / block_steps * 1000.0
            patches.restore()
            return spent

        block(True)  # warm-up, and the probe's first step (the parameter digest) out of the way
        block(False)
        pairs = [(block(False), block(True)) for _ in range(blocks)]
        probe.log.close()
        probed = sum(1 for line in Path(f"{tmp}/probe0.jsonl").read_text().splitlines() if '"ev":"step"' in line)
        if probed != (blocks + 1) * block_steps:
            sys.exit(f"the probe logged {probed} steps: not a like-for-like comparison")
        # The probe's own work at a step, timed alone on the trainer's optimizer and gradients:
        # the gradient norm, the learning rates, the `step` and `heartbeat` lines.
        alone = Probe(ProbeSettings(log_template=f"{tmp}/alone{{rank}}.jsonl"), environ={})
        alone.attach(torch)
        hooks = []
        for _ in range(5):
            start = time.process_time()
            for _ in range(200):
                alone.end_step(alone.begin_step(trainer.optimizer))
            hooks.append((time.process_time() - start) / 200 * 1e6)
        alone.log.close()
        from bigmac_probe.digests import input_digest, is_digest_step, param_digest
        from bigmac_probe.tensor_stats import optimizer_params
        params = optimizer_params(trainer.optimizer)
        first_input = trainer.micro_batch(0, 0)[:, :-1]  # what the trainer's first forward is given
        input_us = timed_us(lambda: input_digest(torch, first_input))
        param_us = timed_us(lambda: param_digest(torch, params), number=50)
        digest_steps = sum(1 for s in range(1000) if is_digest_step(s))
    a = statistics.median(p[0] for p in pairs)
    b = statistics.median(p[1] for p in pairs)
    ratios = [y / x for x, y in pairs]
    print(f"examples/torch_trainer in process (demo model, 1 thread), {blocks} blocks of {block_steps} steps "
          f"each side: CPU per step without {a:.2f} ms, with {b:.2f} ms (+{(b - a) * 1000:.0f} us); median ratio "
          f"{statistics.median(ratios):.4f} (pairs {min(ratios):.4f}-{max(ratios):.4f})")
    print(f"the probe's own work at one step of it, timed alone (begin_step + end_step, 5 x 200): "
          f"median {statistics.median(hooks):.0f} us CPU = {statistics.median(hooks) / 1000 / a * 100:.2f}% "
          f"of a step")
    print(f"the digests alone (5 x 200): a step's first input {list(first_input.shape)} "
          f"{first_input.dtype}, every step: {input_us:.0f} us CPU = {input_us / 1000 / a * 100:.3f}% of a step; "
          f"the parameters ({sum(p.numel() for p in params)} in {len(params)} tensors), at {digest_steps} of "
          f"1000 steps: {param_us:.0f} us = {param_us / 1000 / a * 100:.2f}% of such a step, "
          f"{param_us * digest_steps / 1000:.1f} us = {param_us * digest_steps / 1000 / 1000 / a * 100:.4f}% "
          f"a step over 1000 steps")


def micro(total_steps):
    import torch

    PatchSet, Probe, ProbeSettings, _, instrument_torch = probe_tools()
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 32)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 32)

    def block(n):
        start = time.process_time()
        for _ in range(n):
            model(x).pow(2).mean().backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
        return (time.process_time() - start) / n * 1e6

    with tempfile.TemporaryDirectory(prefix="bigmac-probe-bench-") as tmp:
        probe = Probe(ProbeSettings(log_template=f"{tmp}/rank{{rank}}.jsonl"), environ={})
        patches = PatchSet()
        block(200)  # warm-up
        plain, probed = [], []
        size = 250
        for _ in range(max(1, total_steps // size)):
            plain.append(block(size))
            counted = probe.steps
            instrument_torch(probe, patches, torch)
            if counted is not None:
                probe.steps = counted  # one run's step count (the digest steps), as above
            probed.append(block(size))
            patches.restore()
        probe.log.close()
    a, b = statistics.median(plain), statistics.median(probed)
    print(f"in process, Linear(32, 32) step (forward, backward, clip, AdamW), {total_steps} steps each: "
          f"without {a:.1f} us, with {b:.1f} us CPU per step: +{b - a:.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--block-steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=5, help="steps of the short runs")
    parser.add_argument("--long", type=int, default=25, help="steps of the long runs")
    parser.add_argument("--micro-steps", type=int, default=2000)
    args = parser.parse_args()
    trainer_in_process(args.blocks, args.block_steps)
    if args.rounds > 0:
        end_to_end(args.rounds, args.short, args.long)
    micro(args.micro_steps)


if __name__ == "__main__":
    main()
