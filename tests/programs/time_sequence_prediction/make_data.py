#!/usr/bin/env python3
"""Write a small traindata.pt for train.py (our own helper; a smaller stand-in for the
program's own generate_sine_wave.py, whose 100 x 1000 waves make one LBFGS step take ~90 s
on 2 CPU cores).

train.py loads traindata.pt with torch.load and expects a float64 numpy array of shape
(waves, length): rows 0-2 are the test set, rows 3.. the training set.  Each row here is a
sine wave with period 2*pi*20 samples and a per-row phase shift; fixed seed, same file
every run.

usage: python3 make_data.py [--waves N] [--length L] [--out traindata.pt]
"""
import argparse

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--waves", type=int, default=8, help="rows; the first 3 are the test set")
    parser.add_argument("--length", type=int, default=60, help="samples per row")
    parser.add_argument("--out", default="traindata.pt")
    args = parser.parse_args()
    rng = np.random.RandomState(5)
    shifts = rng.randint(-80, 80, size=(args.waves, 1))
    positions = np.arange(args.length)[None, :] + shifts
    waves = np.sin(positions / 20.0).astype("float64")
    with open(args.out, "wb") as f:
        torch.save(waves, f)
    print("wrote %s: %d waves x %d samples" % (args.out, args.waves, args.length))


if __name__ == "__main__":
    main()
