#!/usr/bin/env python3
"""Plant a tiny fake MNIST in torchvision's raw on-disk format (our own test helper).

torchvision 0.14's datasets.MNIST(root, download=True) only checks that the four raw
idx files exist under ROOT/MNIST/raw/ (no checksum), then parses them, so these small
files stand in for the real download.  Deterministic: the same bytes on every run.

usage: python3 fake_digits.py ROOT [--train N] [--test N]
"""
import argparse
import os
import random
import struct


def write_idx(path, dims, payload):
    # idx header: 0x00 0x00 <type 0x08 = ubyte> <number of dims>, then each dim as big-endian int32
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 0x08, len(dims)))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(payload)


def make_split(rng, count):
    labels = bytes(rng.randrange(10) for _ in range(count))
    images = bytearray()
    for label in labels:
        # a blurry bar whose position depends on the label, plus noise: learnable, not empty
        for row in range(28):
            for col in range(28):
                on = abs(col - (4 + 2 * label)) <= 1 and 4 <= row < 24
                images.append(min(255, (200 if on else 0) + rng.randrange(40)))
    return labels, bytes(images)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--train", type=int, default=512)
    parser.add_argument("--test", type=int, default=128)
    args = parser.parse_args()
    raw = os.path.join(args.root, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    rng = random.Random(1234)
    for prefix, count in (("train", args.train), ("t10k", args.test)):
        labels, images = make_split(rng, count)
        write_idx(os.path.join(raw, prefix + "-images-idx3-ubyte"), (count, 28, 28), images)
        write_idx(os.path.join(raw, prefix + "-labels-idx1-ubyte"), (count,), labels)
    print("fake MNIST: %d train, %d test images in %s" % (args.train, args.test, raw))


if __name__ == "__main__":
    main()
