#!/usr/bin/python3
"""What the probe's digests cost per MB: `param_digest` (every parameter, whole, copied to the
host and hashed with SHA-256) and `input_digest` (a forward's first input, its first
INPUT_DIGEST_LIMIT bytes), on float32 tensors of several sizes, in CPU milliseconds per MB; and
what a micro-batch's sample set costs (`sample_set`: each row's first SAMPLE_ROW_LIMIT bytes
hashed), by rows per micro-batch, with what the step's bookkeeping adds while the per-sample
hashes are still written (`sample_hashes`: 16 hex digits a sample in the step event).

    /usr/bin/python3 bench/probe/digest_throughput.py [--sizes 1,16,64] [--repeats 9]

Each figure is the median of `--repeats` timings (process CPU time, so a loaded machine's
waiting is not counted). Parameters are split into tensors of at most 4 MB, as a model's are.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "probe"))
import torch  # noqa: E402

from bigmac_probe.digests import (INPUT_DIGEST_LIMIT, SAMPLE_ROW_LIMIT, input_digest, param_digest,  # noqa: E402
                                  sample_hashes, sample_set)
from bigmac_probe.step_tracker import StepTracker  # noqa: E402

MB = 1_000_000


def cpu_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,16,64", help="MB of parameters / input, comma separated")
    ap.add_argument("--rows", default="8,64,512", help="rows (samples) per micro-batch, comma separated")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}; input digest limit {INPUT_DIGEST_LIMIT} bytes")
    print(f"{'MB':>5} {'param_digest ms':>16} {'ms/MB':>7} {'input_digest ms':>16} {'hashed MB':>10}")
    for size in (int(s) for s in args.sizes.split(",")):
        numel = size * MB // 4
        chunk = 1_000_000  # 4 MB float32 tensors
        params = [torch.randn(min(chunk, numel - i)) for i in range(0, numel, chunk)]
        batch = torch.randn(numel // 1024, 1024)
        p_ms = cpu_ms(lambda: param_digest(torch, params), args.repeats)
        i_ms = cpu_ms(lambda: input_digest(torch, batch), args.repeats)
        hashed = input_digest(torch, batch)[1] / MB
        print(f"{size:>5} {p_ms:>16.2f} {p_ms / size:>7.3f} {i_ms:>16.3f} {hashed:>10.3f}")
    print(f"sample sets: rows of 3x32x32 float32 (12 KB, {SAMPLE_ROW_LIMIT} bytes hashed each), "
          "and of 512 int64 tokens (4 KB)")
    print(f"{'rows':>5} {'image rows ms':>14} {'token rows ms':>14} {'us/row':>7} {'+hashes us/row':>15}")
    for rows in (int(r) for r in args.rows.split(",")):
        images = torch.randn(rows, 3, 32, 32)
        tokens = torch.randint(0, 50000, (rows, 512))
        im_ms = cpu_ms(lambda: sample_set(torch, images), args.repeats)
        tok_ms = cpu_ms(lambda: sample_set(torch, tokens), args.repeats)
        hashes = sample_hashes(torch, tokens)

        def bookkeeping():
            steps = StepTracker(torch, 0.0)  # fresh: its hash budget not spent
            steps.note_samples(hashes)
            steps.take_samples()
        book_ms = cpu_ms(bookkeeping, args.repeats)
        print(f"{rows:>5} {im_ms:>14.3f} {tok_ms:>14.3f} {1000 * im_ms / rows:>7.1f} "
              f"{1000 * book_ms / rows:>15.2f}")


if __name__ == "__main__":
    main()
