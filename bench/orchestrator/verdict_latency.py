#!/usr/bin/env python3
"""How soon a failing gate gets its verdict (issue 16's benchmarks), both sides in one run.

divergence: for each fault of the fault matrix that a baseline comparison catches, run-all up to
  its gate twice - stopping at the first certain divergence (the default) and running to the end
  (`gates.<id>.stop_on_divergence=false`) - and report the first divergent step, the step at
  which the gate stopped, and the gate's wall time both ways. Goal: stopped within one step.
hang: hang_rank=1:2 (dp) and stage_stall=1:3 (pp2) with the default limits (stall_min_s 5,
  stall_factor 10, stall_timeout_s 60) against the fixed limit of before (stall_factor 0: 60 s
  whatever the step time): seconds from the last line any rank logged to the verdict (the end
  of the gate's launch, teardown included). Goal: <= 10 s, against 60 s before.

  bench/orchestrator/verdict_latency.py divergence|hang|all [--binary build/bin/bigmac-bringup]
      [--config configs/demo.toml] [--runs 1] [--port 29660]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile
import time

# fault, --set values, gate, attempt folder, the rank that logs the steps
DIVERGENCE_FAULTS = [
    ("lr_scale_by_world", ["faults.lr_scale_by_world=true"], "dp", "02-dp.1", 0),
    ("ragged_microbatch", ["faults.ragged_microbatch=true"], "dp", "02-dp.1", 0),
    ("accum_not_rescaled", ['gates.dp.rescale="none"'], "dp", "02-dp.1", 0),
    ("untied_sync", ["faults.untied_sync=true"], "pp2", "03-pp2.1", 1),
]
HANG_FAULTS = [
    ("hang_rank=1:2", ["faults.hang_rank=1:2"], "dp", "02-dp.1"),
    ("stage_stall=1:3", ["faults.stage_stall=1:3"], "pp2", "03-pp2.1"),
]


def run_all(args, tmp: pathlib.Path, until: str, sets: list) -> pathlib.Path:
    run_dir = tmp / "run"
    argv = [args.binary, "run-all", "-c", args.config, "--ci", "--run-dir", str(run_dir),
            "--no-baseline", "--until", until,
            "--set", f"launch.master_port={args.port}"]
    for s in sets:
        argv += ["--set", s]
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 1:
        raise SystemExit(f"expected the gate to fail (exit 1), got {done.returncode}: "
                         f"{done.stderr[-2000:]}")
    return run_dir


def steps_logged(attempt: pathlib.Path, rank: int) -> list:
    steps = []
    for line in (attempt / f"rank{rank}.log").read_text().splitlines():
        if '"ev":"step"' in line:
            steps.append(json.loads(line)["global_step"])
    return steps


def last_line_time(attempt: pathlib.Path) -> float:
    last = 0.0
    for log in attempt.glob("rank*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("{"):
                last = max(last, json.loads(line.replace("NaN", "null")).get("t", 0.0))
    return last


def divergence(args) -> None:
    print("divergence to verdict (gate wall time from its result.json; medians over "
          f"{args.runs} run(s))")
    print(f"{'fault':<20} {'gate':<5} {'first divergent':>15} {'stopped at':>10} {'late by':>7} "
          f"{'gate early':>10} {'to the end':>10} {'saved':>7}")
    for name, sets, gate, attempt_dir, rank in DIVERGENCE_FAULTS:
        early_s, end_s, late = [], [], []
        certain = stopped = None
        for _ in range(args.runs):
            for stop in (True, False):
                with tempfile.TemporaryDirectory(prefix="bigmac-verdict-") as tmp:
                    run_dir = run_all(args, pathlib.Path(tmp), gate,
                                      sets + [f"gates.{gate}.stop_on_divergence={str(stop).lower()}"])
                    attempt = run_dir / attempt_dir
                    result = json.loads((attempt / "result.json").read_text())
                    verdict = json.loads((attempt / "verdict.json").read_text())
                    if stop:
                        failed = next(c for c in verdict["checks"] if not c["passed"])
                        certain = failed.get("certain_at")
                        logged = steps_logged(attempt, rank)
                        stopped = max(logged) if logged else -1
                        late.append(stopped - certain)
                        early_s.append(result["duration_s"])
                    else:
                        end_s.append(result["duration_s"])
        e, t = statistics.median(early_s), statistics.median(end_s)
        print(f"{name:<20} {gate:<5} {certain:>15} {stopped:>10} {max(late):>7} {e:>9.2f}s "
              f"{t:>9.2f}s {t - e:>6.2f}s")


def hang(args) -> None:
    print("hang to verdict: seconds from the last line any rank logged to the end of the gate's "
          "launch (teardown included)")
    print(f"{'fault':<16} {'gate':<5} {'defaults (adaptive)':>20} {'fixed 60 s (before)':>20}")
    for name, sets, gate, attempt_dir in HANG_FAULTS:
        figures = {}
        for label, limits in (("adaptive", ["launch.stall_factor=10"]),
                              ("fixed", ["launch.stall_factor=0"])):
            values = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="bigmac-hang-") as tmp:
                    run_dir = run_all(args, pathlib.Path(tmp), gate, sets + limits +
                                      ["launch.stall_timeout_s=60", "launch.stall_min_s=5"])
                    attempt = run_dir / attempt_dir
                    result = json.loads((attempt / "result.json").read_text())
                    end = result["started_at"] + result["duration_s"]
                    values.append(end - last_line_time(attempt))
            figures[label] = statistics.median(values)
        print(f"{name:<16} {gate:<5} {figures['adaptive']:>19.1f}s {figures['fixed']:>19.1f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["divergence", "hang", "all"])
    parser.add_argument("--binary", default="build/bin/bigmac-bringup")
    parser.add_argument("--config", default="configs/demo.toml")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--port", type=int, default=29660)
    args = parser.parse_args()
    started = time.monotonic()
    if args.what in ("divergence", "all"):
        divergence(args)
    if args.what in ("hang", "all"):
        hang(args)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
