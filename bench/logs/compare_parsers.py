#!/usr/bin/env python3
"""Generate big bigmac JSONL and Megatron logs and compare parsers on them, one core each.

bigmac's LogStream (bigmac_logs_bench, Google Benchmark) against `jq` extracting the same fields
from the JSONL, and against a plain Python regex parser of the Megatron iteration lines. All rates
are bytes per CPU second of one process on one core, so a busy machine skews them less.

    bench/logs/compare_parsers.py --size 1G --bench build/bin/bigmac_logs_bench

Files are written once to --dir and reused while their size matches.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def bigmac_step(step, t):
    """One pipeline step on the loss-owning rank; the same mix as log_stream_bench.cpp."""
    out = []
    loss = 4.0 - step * 1e-4
    for mb in range(4):
        for phase in "FB":
            t += 0.001
            out.append('{"ev":"mb","rank":1,"t":%.6f,"global_step":%d,"stage":1,"mb":%d,'
                       '"phase":"%s","start":%.6f,"end":%.6f}\n'
                       % (t, step, mb, phase, t - 0.0005, t))
        out.append('{"ev":"loss","rank":1,"t":%.6f,"global_step":%d,"stage":1,"mb":%d,'
                   '"value":%.6f}\n' % (t, step, mb, loss))
    out.append('{"ev":"heartbeat","rank":1,"t":%.6f,"global_step":%d}\n' % (t, step))
    out.append('{"ev":"step","rank":1,"t":%.6f,"global_step":%d,"loss":%.6f,"grad_norm":%.6f,'
               '"lr":%.8f,"samples_per_step":8,"step_ms":%.3f}\n'
               % (t, step, loss, 1.5, 6e-4, 12.5))
    return "".join(out), t


def megatron_line(it):
    # Megatron-LM training_log() layout, format widths included.
    return (" [2024-05-01 12:%02d:%02d] iteration %8d/%8d | consumed samples: %12d | "
            "elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: "
            "%5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped "
            "iterations: %3d | number of nan iterations: %3d |\n"
            % ((it // 60) % 60, it % 60, it, 1000000, it * 32, 1234.5, 1.5e-4, 32,
               7.0 - it * 1e-6, 1.0, 2.345, 0, 0))


def generate(path, size, make_block):
    if os.path.exists(path) and os.path.getsize(path) >= size:
        return
    written, index, state = 0, 0, 1764412800.0
    with open(path + ".tmp", "w") as f:
        while written < size:
            block = []
            for _ in range(1000):
                text, state = make_block(index, state)
                block.append(text)
                index += 1
            chunk = "".join(block)
            f.write(chunk)
            written += len(chunk)
    os.replace(path + ".tmp", path)


def run_bigmac(bench, jsonl, megatron):
    env = dict(os.environ, BIGMAC_BENCH_JSONL=jsonl, BIGMAC_BENCH_MEGATRON=megatron)
    out = subprocess.run([bench, "--benchmark_filter=BM_File", "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    rates = {}
    for b in json.loads(out)["benchmarks"]:
        rates[b["name"].split("/")[1]] = b["bytes_per_second"] / 1e6
    return rates["BIGMAC_BENCH_JSONL"], rates["BIGMAC_BENCH_MEGATRON"]


JQ_FIELDS = ("[.ev, .rank, .t, .global_step, .loss, .grad_norm, .lr, .samples_per_step, "
             ".step_ms, .stage, .mb, .phase, .start, .end, .value]")


def child_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_jq(path):
    # CPU time, like Google Benchmark's rate: the machine may be shared.
    start = child_cpu_seconds()
    with open(os.devnull, "w") as sink:
        subprocess.run(["jq", "-c", JQ_FIELDS, path], stdout=sink, check=True)
    return os.path.getsize(path) / (child_cpu_seconds() - start) / 1e6


MEGATRON = re.compile(
    r"iteration\s+(\d+)/\s*(\d+) \| consumed samples:\s+(\d+) \| "
    r"elapsed time per iteration \(ms\): ([^ ]+) \| learning rate: ([^ ]+) \| "
    r"global batch size:\s+(\d+) \| lm loss: ([^ ]+) \| loss scale: ([^ ]+) \| "
    r"grad norm: ([^ ]+) \| number of skipped iterations:\s+(\d+) \| "
    r"number of nan iterations:\s+(\d+) \|")


def run_python_regex(path):
    start = time.process_time()
    steps = 0
    with open(path, "r", errors="replace") as f:
        for line in f:
            m = MEGATRON.search(line)
            if m:
                record = (int(m[1]) - 1, float(m[7]), float(m[5]), float(m[9]), int(m[6]),
                          float(m[4]))
                steps += record is not None
    elapsed = time.process_time() - start
    return os.path.getsize(path) / elapsed / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="64M", help="size of each log (default 64M; 1G for "
                        "the README figure)")
    parser.add_argument("--dir", default="/tmp/bigmac-logs-bench")
    parser.add_argument("--bench", default="build/bin/bigmac_logs_bench")
    args = parser.parse_args()
    size = parse_size(args.size)
    os.makedirs(args.dir, exist_ok=True)
    jsonl = os.path.join(args.dir, f"bigmac-{args.size}.jsonl")
    megatron = os.path.join(args.dir, f"megatron-{args.size}.log")
    print(f"generating {args.size} logs in {args.dir} ...", flush=True)
    generate(jsonl, size, bigmac_step)
    generate(megatron, size, lambda i, s: (megatron_line(i + 1), s))

    big_jsonl, big_megatron = run_bigmac(args.bench, jsonl, megatron)
    rows = [("bigmac JSONL (LogStream)", big_jsonl, None)]
    if shutil.which("jq"):
        jq = run_jq(jsonl)
        rows.append(("jq -c (same fields)", jq, big_jsonl / jq))
    else:
        print("jq not found: install the Debian package jq", file=sys.stderr)
    rows.append(("Megatron (LogStream)", big_megatron, None))
    py = run_python_regex(megatron)
    rows.append(("Megatron (Python re)", py, big_megatron / py))

    print(f"{'parser':28} {'MB/s':>10} {'bigmac is':>10}")
    for name, rate, ratio in rows:
        print(f"{name:28} {rate:10.1f} {('%.1fx faster' % ratio) if ratio else '':>14}")


if __name__ == "__main__":
    main()
