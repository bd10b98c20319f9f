#!/usr/bin/env python3
"""Diagnose a large multi-rank log with `bigmac-bringup diagnose` and with `grep -E` over the same
catalog patterns, both pinned to one core, and print MB/s for each (one run, both sides).

usage: compare_grep.py BIGMAC_BRINGUP [--size MB] [--keep FILE] [--runs N]

The log is what a torchrun job of 64 ranks writes to one file: every line carries its rank's
`[rankN]:` prefix, ranks interleave; rank 0 prints bigmac step records, all ranks print NCCL
INFO lines, warnings, progress bars and traceback frames, and about one line in 2,000 starts a
real error message from tests/diagnose/corpus. A quarter of those messages are wrapped at a
terminal width (40-160 columns) the way a terminal or logger breaks them, and the same error is
repeated by many ranks. grep is given every catalog pattern translated to POSIX ERE (named groups
dropped, \\d → [0-9] ...); it counts the lines that match, so it cannot join wrapped lines: its
count is the number of matching lines, diagnose's the number of matches it reports.
"""
import argparse
import glob
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --- RE2 → POSIX ERE -------------------------------------------------------------------------

CLASS_ESC = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}
TOP_ESC = {"d": "[0-9]", "D": "[^0-9]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]",
           "s": "[[:space:]]", "S": "[^[:space:]]", "b": "\\b"}


def letters(c, ci):
    return f"[{c.lower()}{c.upper()}]" if ci and c.isalpha() else c


def to_ere(pattern):
    """Translates the RE2 subset the catalog uses into an ERE GNU grep accepts."""
    ci = False
    if pattern.startswith("(?i)"):
        ci, pattern = True, pattern[4:]
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            e = pattern[i + 1]
            i += 2
            if e in TOP_ESC:
                out.append(TOP_ESC[e])
            elif e.isalnum():
                raise ValueError(f"escape \\{e} in {pattern!r}")
            elif e in ".[]()*+?{}|^$\\":
                out.append("\\" + e)
            else:
                out.append(e)
        elif c == "[":
            j = i + 1
            negate = j < n and pattern[j] == "^"
            if negate:
                j += 1
            items, close, dash = [], False, False
            while j < n and pattern[j] != "]":
                if pattern[j] == "\\":
                    e = pattern[j + 1]
                    j += 2
                    if e in CLASS_ESC:
                        items.append(CLASS_ESC[e])
                    elif e == "]":
                        close = True
                    elif e == "-":
                        dash = True
                    else:
                        items.append(e)
                elif pattern[j] == "[" and pattern[j + 1] == ":":
                    k = pattern.index(":]", j) + 2
                    items.append(pattern[j:k])
                    j = k
                else:
                    ch = pattern[j]
                    items.append(ch.lower() + ch.upper() if ci and ch.isalpha() else ch)
                    j += 1
            body = ("]" if close else "") + "".join(items) + ("-" if dash else "")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = j + 1
        elif c == "(" and pattern.startswith("(?P<", i):
            i = pattern.index(">", i) + 1
            out.append("(")
        elif c == "(" and pattern.startswith("(?:", i):
            i += 3
            out.append("(")
        elif c in "*+?}" and i + 1 < n and pattern[i + 1] == "?":
            out.append(c)  # a lazy quantifier matches the same lines greedily
            i += 2
        else:
            out.append(letters(c, ci))
            i += 1
    return "".join(out)


def catalog_patterns():
    catalog = tomllib.load(open(os.path.join(ROOT, "stages/diagnoses.toml"), "rb"))
    return [p for s in catalog["signature"] for p in s["patterns"]]


# --- the log ----------------------------------------------------------------------------------

def corpus_messages():
    """Error lines of the corpus excerpts, prefixes left as the reporters pasted them."""
    out = []
    for f in sorted(glob.glob(os.path.join(ROOT, "tests/diagnose/corpus/*.toml"))):
        for e in tomllib.load(open(f, "rb"))["excerpt"]:
            for line in e["log"].splitlines():
                if len(line) > 30 and not line.lstrip().startswith(("File ", "frame #")):
                    out.append(line)
    return out


def wrap(line, width, rng):
    if rng.random() < 0.5:
        return [line[i:i + width] for i in range(0, len(line), width)]  # a terminal
    words, rows, row = line.split(" "), [], ""
    for w in words:  # a logger: breaks at spaces and drops them
        if row and len(row) + 1 + len(w) > width:
            rows.append(row)
            row = w
        else:
            row = f"{row} {w}" if row else w
    return rows + ([row] if row else [])


def make_log(path, megabytes, seed=7):
    rng = random.Random(seed)
    errors = corpus_messages()
    ranks = 64
    target = megabytes * 1_000_000
    size = step = 0
    pending = []  # (rank, line) of a message being printed by several ranks
    with open(path, "w") as out:
        buf = []
        while size < target:
            if pending:
                rank, text = pending.pop(0)
            else:
                r = rng.randrange(2000)
                rank = rng.randrange(ranks)
                if r == 0:
                    msg = rng.choice(errors)
                    width = rng.choice([40, 80, 120, 160]) if rng.random() < 0.25 else 0
                    pieces = wrap(msg, width, rng) if width else [msg]
                    for rep in range(rng.choice([1, 1, 4, 16])):
                        who = (rank + rep) % ranks
                        pending.extend((who, p) for p in pieces)
                    continue
                if r < 700:
                    if rank == 0 or r < 40:
                        text = (f'{{"ev":"step","global_step":{step},"loss":{4.0 / (1 + step * 1e-4):.5f},'
                                f'"grad_norm":{0.5 + rng.random():.4f},"lr":0.0003,"samples_per_step":256,'
                                f'"step_ms":{400 + rng.random() * 20:.1f}}}')
                        step += 1
                    else:
                        text = f"{step:6d}/100000 [{rng.randrange(100):02d}:{rng.randrange(60):02d}<00:00, 2.41it/s, loss={4.0 / (1 + step * 1e-4):.3f}]"
                elif r < 1300:
                    text = (f"node{rank // 8}:{4000 + rank}:{5000 + rank} [{rank % 8}] NCCL INFO Channel "
                            f"{rng.randrange(32):02d}/32 : {rank} -> {(rank + 1) % ranks} via P2P/IPC/read")
                elif r < 1700:
                    text = (f'  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line '
                            f'{rng.randrange(2000)}, in _call_impl')
                else:
                    text = ("/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:429: UserWarning: "
                            "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False")
            line = f"[rank{rank}]:{text}\n"
            buf.append(line)
            size += len(line)
            if len(buf) >= 4096:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
    return size


# --- measuring --------------------------------------------------------------------------------

def run_cpu(argv, stdout):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, cpu, wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("--size", type=int, default=1000, help="megabytes (decimal)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each; the fastest counts")
    parser.add_argument("--keep", help="write the log here and keep it")
    args = parser.parse_args()

    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    patterns = catalog_patterns()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.keep or os.path.join(tmp, "ranks.log")
        ere = os.path.join(tmp, "patterns.ere")
        with open(ere, "w") as f:
            f.write("\n".join(to_ere(p) for p in patterns) + "\n")
        if not (args.keep and os.path.exists(log)):
            make_log(log, args.size)
        size_mb = os.path.getsize(log) / 1e6

        best = {}
        for _ in range(args.runs):
            proc, cpu, wall = run_cpu(pin + [args.tool, "diagnose", "--json", log], subprocess.PIPE)
            if proc.returncode not in (0, 1):
                sys.exit(f"diagnose failed ({proc.returncode}): {proc.stderr.decode()[:400]}")
            found = sum(d["matches"] for d in json.loads(proc.stdout)["diagnoses"])
            best["diagnose"] = min(best.get("diagnose", (1e9,)), (cpu, wall, found))
            proc, cpu, wall = run_cpu(pin + ["grep", "-E", "-c", "-f", ere, log], subprocess.PIPE)
            if proc.returncode not in (0, 1):
                sys.exit(f"grep failed ({proc.returncode}): {proc.stderr.decode()[:400]}")
            best["grep"] = min(best.get("grep", (1e9,)), (cpu, wall, int(proc.stdout)))

    grep_v = subprocess.run(["grep", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{size_mb:.0f} MB log, {len(patterns)} catalog patterns, pinned to one core: {bool(pin)}, "
          f"fastest of {args.runs} runs")
    for name, label in (("diagnose", "bigmac-bringup diagnose"), ("grep", grep_v + " -E -c")):
        cpu, wall, found = best[name]
        print(f"{label:32s} {cpu:7.2f} s CPU {wall:7.2f} s wall  {size_mb / cpu:7.1f} MB/s CPU  "
              f"{size_mb / wall:7.1f} MB/s wall  {found} matches")
    print(f"ratio (grep CPU / diagnose CPU): {best['grep'][0] / best['diagnose'][0]:.2f}x")


if __name__ == "__main__":
    main()
