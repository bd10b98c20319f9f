#!/usr/bin/env python3
"""Diagnose a large generated log with `bigmac-bringup diagnose` and with `grep -P` over the
same catalog patterns (the tool a user would otherwise reach for), and print CPU seconds.

usage: compare_grep.py BIGMAC_BRINGUP [MEGABYTES]

The log is mostly training noise (progress lines, traceback frames, NCCL INFO) with about one
line in a thousand taken from the error lines of tests/diagnose/fixtures. grep only counts the
lines that match; diagnose also reads records, fills captures, ranks and prints diagnoses.
"""
import glob
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_log(path, megabytes):
    random.seed(7)
    errors = []
    for f in glob.glob(os.path.join(ROOT, "tests/diagnose/fixtures/**/*.log"), recursive=True):
        errors += [l.rstrip("\n") for l in open(f) if "rror" in l or "Watchdog" in l]
    size, step = 0, 0
    with open(path, "w") as out:
        while size < megabytes * 1024 * 1024:
            r = random.randrange(1000)
            if r == 0:
                line = random.choice(errors)
            elif r < 60:
                line = '  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line %d, in _call_impl' % random.randrange(2000)
            elif r < 120:
                line = "node0:%d:5000 [%d] NCCL INFO Channel %02d/02 :    0   1   2   3" % (4000 + random.randrange(8), random.randrange(8), random.randrange(2))
            else:
                line = "[rank%d]:2026-11-29 10:00:00,000 | INFO | trainer | step %5d | loss %.4f | grad_norm %.3f" % (random.randrange(4), step, 4.0 / (1 + step * 1e-3), 0.8 + random.random() / 10)
            out.write(line + "\n")
            size += len(line) + 1
            step += 1


def cpu_seconds(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    tool = sys.argv[1]
    megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    catalog = tomllib.load(open(os.path.join(ROOT, "stages/diagnoses.toml"), "rb"))
    patterns = [p for s in catalog["signature"] for p in s["patterns"]]
    # grep -P rejects repeated group names across alternatives: drop the names.
    joined = "|".join("(?:%s)" % re.sub(r"\(\?P<\w+>", "(", p) for p in patterns)
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "big.log")
        pattern_file = os.path.join(tmp, "patterns.txt")
        open(pattern_file, "w").write(joined)
        make_log(log, megabytes)
        ours = min(cpu_seconds([tool, "diagnose", log]) for _ in range(3))
        grep = min(cpu_seconds(["grep", "-c", "-P", "-f", pattern_file, log]) for _ in range(3))
    print(f"{megabytes} MB, {len(patterns)} patterns")
    print(f"bigmac-bringup diagnose: {ours:.2f} s CPU ({megabytes / ours:.0f} MB/s)")
    print(f"grep -P (count only):    {grep:.2f} s CPU ({megabytes / grep:.0f} MB/s)")
    print(f"ratio: {grep / ours:.1f}x")


if __name__ == "__main__":
    main()
