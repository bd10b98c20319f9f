#!/usr/bin/env python3
"""Orchestrator overhead of `bigmac-bringup run-all` (issue 7's benchmark).

Runs run-all on a config (default configs/demo.toml) a few times and compares its wall time
with the time the ranks themselves ran: for each gate, the longest rank's spawn-to-exit
duration from the attempt's result.json. Overhead = (run-all wall - ranks' wall) / run-all wall.
The target is under 2%. Prints every run and the median.

  bench/orchestrator/overhead.py [--binary build/bin/bigmac-bringup] [--config FILE] [--runs 3]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile
import time


def gate_rank_seconds(run_dir: pathlib.Path) -> float:
    total = 0.0
    for result in sorted(run_dir.glob("*/result.json")):
        ranks = json.loads(result.read_text()).get("ranks", [])
        total += max((r.get("duration_s") or 0.0) for r in ranks) if ranks else 0.0
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/bin/bigmac-bringup")
    parser.add_argument("--config", default="configs/demo.toml")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=29650)
    args = parser.parse_args()

    overheads = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bigmac-overhead-") as tmp:
            run_dir = pathlib.Path(tmp) / "run"
            argv = [args.binary, "run-all", "-c", args.config, "--ci", "--run-dir", str(run_dir),
                    "--baseline", str(pathlib.Path(tmp) / "none.json"),
                    "--set", f"launch.master_port={args.port}"]
            start = time.monotonic()
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wall = time.monotonic() - start
            if done.returncode != 0:
                raise SystemExit(f"run-all exited {done.returncode}: {done.stderr[-2000:]}")
            ranks = gate_rank_seconds(run_dir)
            overhead = (wall - ranks) / wall
            overheads.append(overhead)
            print(f"run {i + 1}: run-all {wall:.2f} s, ranks {ranks:.2f} s, "
                  f"orchestrator {wall - ranks:.2f} s = {100 * overhead:.1f}% of the wall time")
    print(f"median orchestrator overhead: {100 * statistics.median(overheads):.1f}% "
          f"(target < 2%) over {len(overheads)} runs")


if __name__ == "__main__":
    main()
